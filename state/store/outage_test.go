package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/store/redistest"
)

// TestRedisOutage stops Redis in the middle of traffic: every call reports
// ErrUnavailable, commits wait in the spool, and once Redis is back the spool
// replays them so that the totals are exact.
func TestRedisOutage(t *testing.T) {
	srv, err := redistest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	// No retries: an outage should surface at once, not after backoff.
	client := redis.NewClient(&redis.Options{
		Addr: srv.Addr(), DialTimeout: time.Second, MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
	})
	t.Cleanup(func() { _ = client.Close() })
	metrics := NewMetrics(nil)
	clock := newFakeClock(t0)
	s := NewRedis(client, Options{Clock: clock, Metrics: metrics})
	spool := NewSpooler(s, 3, metrics)
	ctx := context.Background()
	line := BudgetLine{Scope: acme, Period: Daily, Limit: 1_000_000}

	for _, id := range []string{"r1", "r2", "r3", "r4", "r5"} {
		if err := s.Reserve(ctx, rid(id), []BudgetLine{line}, 100_000, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := spool.Commit(ctx, rid("r1"), 80_000); err != nil || out != OutcomeCommitted {
		t.Fatalf("commit while up: %s, %v; want committed", out, err)
	}

	if err := srv.StopSaving(); err != nil {
		t.Fatalf("stop redis: %v", err)
	}

	calls := []struct {
		name string
		call func() error
	}{
		{"take_tokens", func() error {
			_, err := s.TakeTokens(ctx, Bucket{Name: "b", ReplenishRate: 1, BurstCapacity: 1}, 1)
			return err
		}},
		{"add_windows", func() error {
			_, err := s.AddWindows(ctx, "g", []WindowLine{{Name: "rpm", Limit: 1, Size: time.Minute, Amount: 1}})
			return err
		}},
		{"reserve", func() error { return s.Reserve(ctx, rid("r9"), []BudgetLine{line}, 1, time.Hour) }},
		// A tenant this process has not seen yet: the admission fails
		// before its round trip, and the provider's windows with it.
		{"admit", func() error {
			fresh := Scope{Tenant: "fresh"}
			res, err := s.Admit(ctx, Admission{
				Tenant: "fresh", ID: ReservationID{Tenant: "fresh", Request: "r1"}, Amount: 1, TTL: time.Hour,
				Lines:    []BudgetLine{{Scope: fresh, Period: Daily, Limit: 1_000_000}},
				Provider: &WindowsCall{Group: "provider:p", Lines: []WindowLine{{Name: "rpm", Limit: 1, Size: time.Minute, Amount: 1}}},
			})
			if err != nil && !errors.Is(res.ProviderErr, ErrUnavailable) {
				t.Errorf("the admission failed with %v, its provider windows with %v; want ErrUnavailable for both", err, res.ProviderErr)
			}
			return err
		}},
		{"commit", func() error { _, err := s.Commit(ctx, rid("r2"), 1); return err }},
		{"release", func() error { _, err := s.Release(ctx, rid("r2")); return err }},
		{"budget", func() error { _, err := s.Budget(ctx, line); return err }},
		{"sweep", func() error { _, err := s.Sweep(ctx); return err }},
		{"key", func() error { _, err := s.Key(ctx, HashKey("k")); return err }},
		{"set_health", func() error { return s.SetHealth(ctx, "openai", "up") }},
		{"healths", func() error { _, err := s.Healths(ctx); return err }},
		{"drills", func() error { _, err := s.Drills(ctx); return err }},
	}
	for _, c := range calls {
		t.Run("unavailable/"+c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, ErrUnavailable) {
				t.Errorf("got %v, want ErrUnavailable", err)
			}
			if got := metricValue(t, metrics.unavailable.WithLabelValues(c.name)); got != 1 {
				t.Errorf("switchyard_store_unavailable_total{op=%q} = %v, want 1", c.name, got)
			}
		})
	}

	actual := map[string]int64{"r2": 90_000, "r3": 100_000, "r4": 150_000} // r4 over-commits
	for _, id := range []string{"r2", "r3", "r4"} {
		if out, err := spool.Commit(ctx, rid(id), actual[id]); err != nil || out != OutcomeSpooled {
			t.Fatalf("commit %s while down: %s, %v; want spooled", id, out, err)
		}
	}
	_, err = spool.Commit(ctx, rid("r5"), 1)
	if !errors.Is(err, ErrSpoolFull) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("commit past the spool limit: got %v, want ErrSpoolFull and ErrUnavailable", err)
	}
	if n, err := spool.Replay(ctx); n != 0 || !errors.Is(err, ErrUnavailable) || spool.Len() != 3 {
		t.Errorf("replay while down: wrote %d, err %v, %d left; want 0, ErrUnavailable, 3", n, err, spool.Len())
	}

	if err := srv.Start(); err != nil {
		t.Fatalf("restart redis: %v", err)
	}
	// The client may take a moment to dial again; the spool keeps what fails.
	written := 0
	for deadline := time.Now().Add(10 * time.Second); spool.Len() > 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		n, err := spool.Replay(ctx)
		if err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("replay after restart: %v", err)
		}
		written += n
	}
	if written != 3 || spool.Len() != 0 {
		t.Fatalf("replay after restart: wrote %d, %d left; want 3, 0", written, spool.Len())
	}
	if out, err := s.Commit(ctx, rid("r3"), 100_000); err != nil || out != OutcomeAlreadyCommitted {
		t.Errorf("commit r3 again: %s, %v; want already_committed", out, err)
	}
	if _, err := s.Release(ctx, rid("r5")); err != nil {
		t.Fatal(err)
	}
	st, err := s.Budget(ctx, line)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(80_000 + 90_000 + 100_000 + 150_000); st.Spent != want || st.Reserved != 0 {
		t.Errorf("after replay: spent %d, reserved %d; want %d, 0", st.Spent, st.Reserved, want)
	}

	counters := []struct {
		name string
		got  float64
		want float64
	}{
		{"spooled", metricValue(t, metrics.spooled), 3},
		{"replayed", metricValue(t, metrics.replayed), 3},
		{"dropped spool_full", metricValue(t, metrics.dropped.WithLabelValues("spool_full")), 1},
		{"spool depth", metricValue(t, metrics.spoolDepth), 0},
	}
	for _, c := range counters {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestRedisServerFaultIsNotAnOutage keeps reply errors from a serving Redis
// apart from ErrUnavailable: failing open on them would hide a bug.
func TestRedisServerFaultIsNotAnOutage(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: sharedRedis.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	s := NewRedis(client, Options{Prefix: isolated("fault")})
	ctx := context.Background()
	b := Bucket{Name: "wrongtype", ReplenishRate: 1, BurstCapacity: 1}
	if err := client.Set(ctx, s.bucketKey(b.Name), "a string", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.TakeTokens(ctx, b, 1)
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("got %v, want a WRONGTYPE error that is not ErrUnavailable", err)
	}
}
