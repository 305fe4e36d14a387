package lease

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchyard/switchyard/state/store"
)

// counting counts the calls that reach the shared store.
type counting struct {
	store.Store
	admits, settles atomic.Int64
}

func (c *counting) Admit(ctx context.Context, a store.Admission) (store.AdmissionResult, error) {
	c.admits.Add(1)
	return c.Store.Admit(ctx, a)
}

func (c *counting) Settle(ctx context.Context, s store.Settlement) (store.SettleResult, error) {
	c.settles.Add(1)
	return c.Store.Settle(ctx, s)
}

// fast leases: short ticks so a test sees leases taken, rotated and retired.
func fast(m *Metrics) Options {
	return Options{Metrics: m, Tick: 10 * time.Millisecond, MaxAge: 50 * time.Millisecond, Idle: 30 * time.Millisecond}
}

// waitTakes waits for the lease takes under way. flushing is held so that
// Run's tick starts none while the group is waited for (a WaitGroup must
// not grow from zero during a Wait).
func waitTakes(s *Store) {
	s.flushing.Lock()
	defer s.flushing.Unlock()
	s.bg.Wait()
}

func start(t *testing.T, inner store.Store, o Options) *Store {
	t.Helper()
	s := New(inner, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

var (
	tenant = store.Scope{Tenant: "acme"}
	key    = store.Scope{Tenant: "acme", Key: "k1"}
)

// request is one admission of tenant acme, with its provider's windows.
func request(id int, amount, limit, tokens int64) store.Admission {
	return store.Admission{
		Tenant:  "acme",
		Buckets: []store.Bucket{{Name: "tenant:acme", ReplenishRate: 1000, BurstCapacity: 100_000}},
		Group:   "tenant:acme",
		Windows: []store.WindowLine{
			{Name: "rpm", Limit: 1_000_000, Size: 24 * time.Hour, Amount: 1},
			{Name: "tpm", Limit: 1_000_000_000, Size: 24 * time.Hour, Amount: tokens},
		},
		ID:     store.ReservationID{Tenant: "acme", Request: "r" + itoa(id)},
		Lines:  []store.BudgetLine{{Scope: key, Period: store.Daily, Limit: limit}, {Scope: tenant, Period: store.Monthly, Limit: limit * 10}},
		Amount: amount,
		TTL:    time.Minute,
		Provider: &store.WindowsCall{Group: "provider:openai", Lines: []store.WindowLine{
			{Name: "rpm", Limit: 1_000_000, Size: 24 * time.Hour, Amount: 1},
		}},
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func budget(t *testing.T, st store.Store, line store.BudgetLine) store.BudgetState {
	t.Helper()
	b, err := st.Budget(context.Background(), line)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// windowUsed reads a window's count without adding to it.
func windowUsed(t *testing.T, st store.Store, group string, l store.WindowLine) int64 {
	t.Helper()
	l.Amount = 0
	r, err := st.AddWindows(context.Background(), group, []store.WindowLine{l})
	if err != nil {
		t.Fatal(err)
	}
	return r.Lines[0].Used
}

// TestLeases: a tenant far from its limits is admitted from leases (no
// store call once they are taken); near a limit every request goes to the
// store, as without leases. Either way what is committed is what requests
// spent, nothing stays reserved and window counts are exact once the
// leases are retired.
func TestLeases(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limit     int64 // daily budget of the key, micro-USD
		requests  int
		maxStore  int // most admissions the store may answer
		minStore  int
		wantSpent bool // every request served
	}{
		{name: "far from limits", limit: 1_000_000_000, requests: 2000, maxStore: 100, wantSpent: true},
		{name: "near the budget", limit: 5_000, requests: 200, minStore: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(nil)
			inner := &counting{Store: store.NewMemory(store.Options{})}
			s := start(t, inner, fast(m))
			var spent, tokens, served int64
			for i := range tc.requests {
				a := request(i, 100, tc.limit, 50)
				res, err := s.Admit(context.Background(), a)
				if err != nil {
					t.Fatal(err)
				}
				if res.Refused != store.Admitted {
					if res.Refused != store.RefusedBudget {
						t.Fatalf("refused by stage %d", res.Refused)
					}
					// Give back the windows, as the quota filter does.
					if _, err := s.Settle(context.Background(), store.Settlement{Windows: []store.WindowDelta{
						{Ref: res.Windows.Lines[0].Ref, Delta: -1}, {Ref: res.Windows.Lines[1].Ref, Delta: -50},
						{Ref: res.Provider.Lines[0].Ref, Delta: -1},
					}}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				served++
				actual := int64(i % 101)
				used := int64(i % 60)
				out, err := s.Settle(context.Background(), store.Settlement{ID: a.ID, Actual: actual, Windows: []store.WindowDelta{
					{Ref: res.Windows.Lines[1].Ref, Delta: used - 50},
				}})
				if err != nil || out.Outcome != store.OutcomeCommitted {
					t.Fatalf("settle: %v %v", out.Outcome, err)
				}
				spent += actual
				tokens += used
				if i%16 == 0 {
					waitTakes(s) // as a busy machine may delay them
				}
			}
			s.Close()
			viaStore := int(testutil.ToFloat64(m.admissions.WithLabelValues("store")))
			t.Logf("%d requests, %d served, %d admitted by the store, %d store admits in all", tc.requests, served, viaStore, inner.admits.Load())
			if viaStore > tc.maxStore && tc.maxStore > 0 || viaStore < tc.minStore {
				t.Errorf("%d admissions answered by the store, want between %d and %d", viaStore, tc.minStore, tc.maxStore)
			}
			if tc.wantSpent && served != int64(tc.requests) {
				t.Errorf("served %d of %d", served, tc.requests)
			}
			for _, l := range request(0, 0, tc.limit, 0).Lines {
				b := budget(t, inner, l)
				if b.Reserved != 0 || b.Spent != spent {
					t.Errorf("%s %s: spent %d reserved %d, want %d and 0", l.Scope, l.Period, b.Spent, b.Reserved, spent)
				}
				if b.Spent > l.Limit {
					t.Errorf("%s %s: spent %d over its limit %d", l.Scope, l.Period, b.Spent, l.Limit)
				}
			}
			a := request(0, 0, 0, 0)
			if got := windowUsed(t, inner, a.Group, a.Windows[0]); got != served {
				t.Errorf("rpm window counts %d, want the %d requests served", got, served)
			}
			if got := windowUsed(t, inner, a.Group, a.Windows[1]); got != tokens {
				t.Errorf("tpm window counts %d, want the %d tokens used", got, tokens)
			}
			if got := windowUsed(t, inner, a.Provider.Group, a.Provider.Lines[0]); got != served {
				t.Errorf("provider rpm window counts %d, want %d", got, served)
			}
		})
	}
}

// TestReplicasNeverOverspend: two replicas' leases on one store, many
// goroutines each, against a small budget. Committed spend never passes
// the limit, nothing stays reserved, and the store's spend is the sum of
// what was committed.
func TestReplicasNeverOverspend(t *testing.T) {
	const limit = 60_000
	inner := store.NewMemory(store.Options{})
	replicas := []*Store{start(t, inner, fast(nil)), start(t, inner, fast(nil))}
	line := store.BudgetLine{Scope: tenant, Period: store.Daily, Limit: limit}
	var (
		committed, served, refused atomic.Int64
		wg                         sync.WaitGroup
		seq                        atomic.Int64
	)
	for g := range 16 {
		r := replicas[g%2]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 400 {
				amount := 1 + rng.Int64N(100)
				id := store.ReservationID{Tenant: "acme", Request: "q" + itoa(int(seq.Add(1)))}
				res, err := r.Admit(context.Background(), store.Admission{Tenant: "acme", ID: id, Lines: []store.BudgetLine{line}, Amount: amount, TTL: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				if res.Refused != store.Admitted {
					refused.Add(1)
					continue
				}
				served.Add(1)
				if rng.IntN(5) == 0 {
					if _, err := r.Settle(context.Background(), store.Settlement{ID: id, Release: true}); err != nil {
						t.Error(err)
					}
					continue
				}
				actual := rng.Int64N(amount + 1)
				if _, err := r.Settle(context.Background(), store.Settlement{ID: id, Actual: actual}); err != nil {
					t.Error(err)
				}
				committed.Add(actual)
				if b := budget(t, inner, line); b.Spent > limit {
					t.Errorf("spent %d of %d", b.Spent, limit)
				}
			}
		})
	}
	wg.Wait()
	for _, r := range replicas {
		r.Close()
	}
	b := budget(t, inner, line)
	t.Logf("served %d, refused %d; spent %d of %d", served.Load(), refused.Load(), b.Spent, limit)
	if b.Spent > limit || b.Reserved != 0 || b.Spent != committed.Load() {
		t.Errorf("spent %d reserved %d; want at most %d, 0, and the %d committed", b.Spent, b.Reserved, limit, committed.Load())
	}
	if refused.Load() == 0 || b.Spent < limit/2 {
		t.Errorf("refused %d, spent %d of %d: the budget should run out", refused.Load(), b.Spent, limit)
	}
}

// TestSettleOnce: a reservation made in a lease settles once, whichever
// call settles it, and reports what happened before when asked again.
func TestSettleOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, then func(*Store, store.ReservationID) (store.Outcome, error)
		want        store.Outcome
		spent       int64
	}{
		{"commit twice", commit(40), commit(40), store.OutcomeAlreadyCommitted, 40},
		{"release then commit", release, commit(40), store.OutcomeAlreadyReleased, 0},
		{"commit then release", commit(30), release, store.OutcomeAlreadyCommitted, 30},
		{"settle then commit", settle(25), commit(40), store.OutcomeAlreadyCommitted, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := store.NewMemory(store.Options{})
			s := start(t, inner, Options{Tick: time.Hour, MaxAge: time.Hour})
			line := store.BudgetLine{Scope: tenant, Period: store.Daily, Limit: 1_000_000}
			admit := func(i int) store.ReservationID {
				id := store.ReservationID{Tenant: "acme", Request: "s" + itoa(i)}
				if _, err := s.Admit(context.Background(), store.Admission{Tenant: "acme", ID: id, Lines: []store.BudgetLine{line}, Amount: 100, TTL: time.Minute}); err != nil {
					t.Fatal(err)
				}
				return id
			}
			first := admit(0)
			if _, err := commit(0)(s, first); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return len(s.budgets) == 1 && len(s.budgets[budgetKey("acme", []store.BudgetLine{line})].open) == 1
			})
			id := admit(1)
			s.mu.Lock()
			_, local := s.holds[id]
			s.mu.Unlock()
			if !local {
				t.Fatal("the second request was not admitted from the lease")
			}
			if _, err := tc.first(s, id); err != nil {
				t.Fatal(err)
			}
			out, err := tc.then(s, id)
			if err != nil || out != tc.want {
				t.Errorf("second settle: %v %v, want %v", out, err, tc.want)
			}
			s.Close()
			if b := budget(t, inner, line); b.Spent != tc.spent || b.Reserved != 0 {
				t.Errorf("spent %d reserved %d, want %d and 0", b.Spent, b.Reserved, tc.spent)
			}
		})
	}
}

func commit(actual int64) func(*Store, store.ReservationID) (store.Outcome, error) {
	return func(s *Store, id store.ReservationID) (store.Outcome, error) {
		return s.Commit(context.Background(), id, actual)
	}
}

func release(s *Store, id store.ReservationID) (store.Outcome, error) {
	return s.Release(context.Background(), id)
}

func settle(actual int64) func(*Store, store.ReservationID) (store.Outcome, error) {
	return func(s *Store, id store.ReservationID) (store.Outcome, error) {
		r, err := s.Settle(context.Background(), store.Settlement{ID: id, Actual: actual})
		return r.Outcome, err
	}
}

// TestBucketBound: requests admitted from leased tokens never outnumber
// what the bucket gave out: its burst plus its refill while the test ran.
func TestBucketBound(t *testing.T) {
	inner := store.NewMemory(store.Options{})
	o := Options{Tick: 10 * time.Millisecond} // tokens live the default Idle
	replicas := []*Store{start(t, inner, o), start(t, inner, o)}
	b := store.Bucket{Name: "tenant:acme", ReplenishRate: 10, BurstCapacity: 500}
	began := time.Now()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				res, err := replicas[g%2].Admit(context.Background(), store.Admission{Tenant: "acme", Buckets: []store.Bucket{b}})
				if err != nil {
					t.Error(err)
					return
				}
				if res.Refused == store.Admitted {
					admitted.Add(1)
				}
				if i%10 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	most := b.BurstCapacity + int64(time.Since(began).Seconds()*b.ReplenishRate) + 1
	t.Logf("admitted %d of 2400; the bucket gave out at most %d", admitted.Load(), most)
	if admitted.Load() > most {
		t.Errorf("admitted %d, more than the bucket's %d", admitted.Load(), most)
	}
	if admitted.Load() < b.BurstCapacity/2 {
		t.Errorf("admitted only %d of a burst of %d", admitted.Load(), b.BurstCapacity)
	}
}

// TestStoreDown: leases already held keep admitting while the store is
// unreachable; once they run out the store's outage is the caller's to
// decide, as without leases; a lease's commit that cannot be written is
// spooled and lands once the store is back.
func TestStoreDown(t *testing.T) {
	mem := store.NewMemory(store.Options{})
	flaky := &flakyStore{Store: mem}
	spool := store.NewSpooler(flaky, 100, nil)
	s := start(t, flaky, Options{Spool: spool, Tick: time.Hour, MaxAge: time.Hour})
	line := store.BudgetLine{Scope: tenant, Period: store.Daily, Limit: 10_000_000}
	admit := func(i int) (store.ReservationID, error) {
		id := store.ReservationID{Tenant: "acme", Request: "d" + itoa(i)}
		_, err := s.Admit(context.Background(), store.Admission{Tenant: "acme", ID: id, Lines: []store.BudgetLine{line}, Amount: 100, TTL: time.Minute})
		return id, err
	}
	id, err := admit(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(context.Background(), store.Settlement{ID: id, Actual: 10}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		set := s.budgets[budgetKey("acme", []store.BudgetLine{line})]
		return set != nil && len(set.open) == 1
	})
	flaky.down.Store(true)
	id, err = admit(1)
	if err != nil {
		t.Fatalf("a held lease should admit without the store: %v", err)
	}
	if _, err := s.Settle(context.Background(), store.Settlement{ID: id, Actual: 70}); err != nil {
		t.Fatal(err)
	}
	s.Close() // the lease's commit fails: spooled
	if spool.Len() != 1 {
		t.Fatalf("spool holds %d commits, want the lease's", spool.Len())
	}
	flaky.down.Store(false)
	if _, err := spool.Replay(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b := budget(t, mem, line); b.Spent != 80 || b.Reserved != 0 {
		t.Errorf("spent %d reserved %d, want 80 and 0", b.Spent, b.Reserved)
	}
	if _, err := admit(2); !errors.Is(err, store.ErrUnavailable) && err != nil {
		t.Errorf("after Close the store answers: %v", err)
	}
}

type flakyStore struct {
	store.Store
	down atomic.Bool
}

func (f *flakyStore) Commit(ctx context.Context, id store.ReservationID, actual int64) (store.Outcome, error) {
	if f.down.Load() {
		return 0, store.ErrUnavailable
	}
	return f.Store.Commit(ctx, id, actual)
}

func (f *flakyStore) Admit(ctx context.Context, a store.Admission) (store.AdmissionResult, error) {
	if f.down.Load() {
		return store.AdmissionResult{}, store.ErrUnavailable
	}
	return f.Store.Admit(ctx, a)
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// TestIdleLeasesGoBack: once requests stop, a replica's leases go back
// to the store by themselves (no Close): nothing stays reserved, and the
// spend settled in them is committed.
func TestIdleLeasesGoBack(t *testing.T) {
	inner := store.NewMemory(store.Options{})
	// Idle longer than MaxAge, as by default: a busy lease is replaced
	// before an idle one is retired.
	s := start(t, inner, Options{Tick: 5 * time.Millisecond, MaxAge: 20 * time.Millisecond, Idle: 100 * time.Millisecond})
	var spent int64
	for i := range 300 {
		a := request(i, 100, 1_000_000_000, 50)
		if _, err := s.Admit(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Settle(context.Background(), store.Settlement{ID: a.ID, Actual: 7}); err != nil {
			t.Fatal(err)
		}
		spent += 7
		if i%16 == 0 {
			waitTakes(s)
		}
	}
	line := request(0, 0, 1_000_000_000, 0).Lines[0]
	waitFor(t, func() bool {
		b := budget(t, inner, line)
		return b.Reserved == 0 && b.Spent == spent
	})
}
