package store

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestPeriodBoundaries checks the Lua calendar against Go's for dates that
// trip calendars up, plus random ones: period starts and the current hour.
func TestPeriodBoundaries(t *testing.T) {
	dates := []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2024, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
		time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 0, 59, 59, 0, time.UTC),
		time.Date(2100, 2, 28, 7, 0, 0, 0, time.UTC),
		time.Date(2100, 3, 1, 8, 0, 0, 0, time.UTC),
		time.Date(2255, 6, 5, 1, 2, 3, 0, time.UTC),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		dates = append(dates, time.Unix(rng.Int64N(4_000_000_000), rng.Int64N(1e9)).UTC())
	}
	for _, b := range []struct {
		name string
		new  backend
	}{{"memory", memoryBackend}, {"redis", redisBackend}} {
		t.Run(b.name, func(t *testing.T) {
			clock := newFakeClock(t0)
			s := b.new(t)(clock)
			for _, d := range dates {
				clock.Set(d)
				for _, p := range []Period{Daily, Monthly} {
					st, err := s.Budget(context.Background(), BudgetLine{Scope: acme, Period: p, Limit: 1})
					if err != nil {
						t.Fatal(err)
					}
					want := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
					if p == Monthly {
						want = time.Date(d.Year(), d.Month(), 1, 0, 0, 0, 0, time.UTC)
					}
					if !st.PeriodStart.Equal(want) || st.CurrentHour != d.Hour() {
						t.Errorf("%s %s: period start %v, hour %d; want %v, %d", d.Format(time.RFC3339Nano), p, st.PeriodStart, st.CurrentHour, want, d.Hour())
					}
				}
			}
		})
	}
}

// TestRedisServerTime runs without a pinned clock: scripts read Redis TIME.
func TestRedisServerTime(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: sharedRedis.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	s := NewRedis(client, Options{Prefix: isolated("servertime")})
	ctx := context.Background()
	before := time.Now().UTC()
	st, err := s.Budget(ctx, BudgetLine{Scope: acme, Period: Daily, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetHealth(ctx, "openai", "up"); err != nil {
		t.Fatal(err)
	}
	h, err := s.Health(ctx, "openai")
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UTC()
	day := func(t time.Time) time.Time { return t.Truncate(24 * time.Hour) }
	if !st.PeriodStart.Equal(day(before)) && !st.PeriodStart.Equal(day(after)) {
		t.Errorf("period start %v, want today %v", st.PeriodStart, day(before))
	}
	// Same machine, so the server clock is the local one give or take the
	// call; a minute's slack only rules out a pinned or zero time.
	if h.Updated.Before(before.Add(-time.Minute)) || h.Updated.After(after.Add(time.Minute)) {
		t.Errorf("health stamped %v, want server time near %v", h.Updated, before)
	}
	res, err := s.TakeTokens(ctx, Bucket{Name: "live", ReplenishRate: 1, BurstCapacity: 5}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Allowed || res.Remaining != 3 {
		t.Errorf("first take from a fresh bucket: %+v, want allowed with 3 left", res)
	}
}

// TestExpiredMetric counts expiries from lazy cleanup and from Sweep.
func TestExpiredMetric(t *testing.T) {
	stores := []struct {
		name string
		new  func(Options) Store
	}{
		{"memory", func(o Options) Store { return NewMemory(o) }},
		{"redis", func(o Options) Store {
			client := redis.NewClient(&redis.Options{Addr: sharedRedis.Addr()})
			t.Cleanup(func() { _ = client.Close() })
			o.Prefix = "metric" + strconv.FormatInt(namespaces.Add(1), 10)
			return NewRedis(client, o)
		}},
	}
	for _, tc := range stores {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := newFakeClock(t0)
			m := NewMetrics(nil)
			s := tc.new(Options{Clock: clock, Metrics: m})
			line := []BudgetLine{{Scope: acme, Period: Daily, Limit: 100}}
			for _, id := range []string{"a", "b"} {
				if err := s.Reserve(ctx, rid(id), line, 10, time.Second); err != nil {
					t.Fatal(err)
				}
			}
			clock.Advance(time.Second)
			if err := s.Reserve(ctx, rid("c"), line, 10, time.Second); err != nil { // expires a and b
				t.Fatal(err)
			}
			clock.Advance(time.Second)
			if _, err := s.Sweep(ctx); err != nil { // expires c
				t.Fatal(err)
			}
			if got := metricValue(t, m.expired); got != 3 {
				t.Errorf("switchyard_store_reservations_expired_total = %v, want 3", got)
			}
		})
	}
}

func TestHashKey(t *testing.T) {
	tests := []struct {
		name, key, want string
	}{
		{"abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := HashKey(tc.key)
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if err := checkHash(got); err != nil {
				t.Errorf("HashKey output refused by checkHash: %v", err)
			}
		})
	}
}

func TestScopeString(t *testing.T) {
	tests := []struct {
		name  string
		scope Scope
		want  string
	}{
		{"tenant", Scope{Tenant: "acme"}, "tenant:acme"},
		{"app", Scope{Tenant: "acme", App: "web"}, "tenant:acme/app:web"},
		{"key", Scope{Tenant: "acme", Key: "k1"}, "tenant:acme/key:k1"},
		{"app and key", Scope{Tenant: "acme", App: "web", Key: "k1"}, "tenant:acme/app:web/key:k1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.scope.String(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBudgetExceededMessage(t *testing.T) {
	err := &BudgetExceededError{Line: BudgetLine{Scope: acmeWeb, Period: Monthly, Limit: 5_000_000}, Remaining: 1_250_000, Requested: 2_000_000}
	want := "budget tenant:acme/app:web monthly exceeded: 1250000 of 5000000 micro-USD remaining, 2000000 requested"
	if got := err.Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestOutcome(t *testing.T) {
	tests := []struct {
		name        string
		outcome     Outcome
		wantString  string
		wantApplied bool
	}{
		{"committed", OutcomeCommitted, "committed", true},
		{"released", OutcomeReleased, "released", true},
		{"late commit", OutcomeLateCommit, "late_commit", true},
		{"already committed", OutcomeAlreadyCommitted, "already_committed", false},
		{"already released", OutcomeAlreadyReleased, "already_released", false},
		{"already expired", OutcomeAlreadyExpired, "already_expired", false},
		{"spooled", OutcomeSpooled, "spooled", false},
		{"zero", 0, "unknown", false},
		{"out of range", 99, "unknown", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.outcome.String(); got != tc.wantString {
				t.Errorf("String() = %s, want %s", got, tc.wantString)
			}
			if got := tc.outcome.Applied(); got != tc.wantApplied {
				t.Errorf("Applied() = %v, want %v", got, tc.wantApplied)
			}
		})
	}
}
