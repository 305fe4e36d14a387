package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/store/redistest"
)

// admitView is the part of an AdmissionResult the tests compare: window
// refs name their group, which differs between tenants, and errors are
// compared by what they say, with the tenant's name left out.
type admitView struct {
	Refused        Stage
	Buckets        []BucketResult
	WindowsAllowed bool
	WindowsRefused int
	Used           []int64
	Budget         string
	Lines          []LineState
	ProviderUsed   []int64 // nil without a provider
	ProviderOK     bool
}

func viewAdmission(tenant string, res AdmissionResult) admitView {
	v := admitView{Refused: res.Refused, Buckets: res.Buckets, WindowsAllowed: res.Windows.Allowed, WindowsRefused: res.Windows.Refused, Lines: res.Lines}
	for _, l := range res.Windows.Lines {
		v.Used = append(v.Used, l.Used)
	}
	if res.Budget != nil {
		v.Budget = strings.ReplaceAll(res.Budget.Error(), "tenant:"+tenant, "tenant:*")
	}
	for _, l := range res.Provider.Lines {
		v.ProviderUsed = append(v.ProviderUsed, l.Used)
	}
	v.ProviderOK = res.Provider.Allowed
	return v
}

// testAdmit walks one tenant's admissions through every step that can
// refuse, from two replicas, and checks that each refusal leaves what the
// steps before it took, as separate calls would.
func testAdmit(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	replicas := []Store{newReplica(clock), newReplica(clock)}
	daily := BudgetLine{Scope: acme, Period: Daily, Limit: 1_000_000}
	keyMonthly := BudgetLine{Scope: acmeKey, Period: Monthly, Limit: 300_000}
	admission := func(req string, amount, tokens int64) Admission {
		return Admission{
			Tenant: "acme",
			Buckets: []Bucket{
				{Name: "tenant:acme/key:k1", ReplenishRate: 10, BurstCapacity: 2},
				{Name: "tenant:acme", ReplenishRate: 1, BurstCapacity: 3},
			},
			Group: "tenant:acme",
			Windows: []WindowLine{
				{Name: "key:k1/rpm", Limit: 3, Size: time.Minute, Amount: 1},
				{Name: "tpm", Limit: 1000, Size: time.Minute, Amount: tokens},
			},
			ID: rid(req), Lines: []BudgetLine{daily, keyMonthly}, Amount: amount, TTL: budgetTTL,
		}
	}
	line := func(limit, spent, reserved int64) LineState { return lineState(limit, spent, reserved, 13, 0) }
	steps := []struct {
		name           string
		advance        time.Duration
		replica        int
		req            string
		amount, tokens int64
		want           admitView
	}{
		{
			name: "admitted", req: "a1", amount: 100_000, tokens: 400,
			want: admitView{
				Buckets:        []BucketResult{{Allowed: true, Remaining: 1}, {Allowed: true, Remaining: 2}},
				WindowsAllowed: true, WindowsRefused: -1, Used: []int64{1, 400},
				Lines: []LineState{line(1_000_000, 0, 100_000), line(300_000, 0, 100_000)},
			},
		},
		{
			name: "the budget refuses; buckets and windows keep what they took", replica: 1, req: "a2", amount: 250_000, tokens: 100,
			want: admitView{
				Refused:        RefusedBudget,
				Buckets:        []BucketResult{{Allowed: true, Remaining: 0}, {Allowed: true, Remaining: 1}},
				WindowsAllowed: true, WindowsRefused: -1, Used: []int64{2, 500},
				Budget: "budget tenant:*/key:k1 monthly exceeded: 200000 of 300000 micro-USD remaining, 250000 requested",
				Lines:  []LineState{line(1_000_000, 0, 100_000), line(300_000, 0, 100_000)},
			},
		},
		{
			name: "the key's bucket refuses; the tenant's is untouched and the windows only read", req: "a3", amount: 1, tokens: 100,
			want: admitView{
				Refused:        RefusedBucket,
				Buckets:        []BucketResult{{RetryAfter: 100 * time.Millisecond}},
				WindowsRefused: -1, Used: []int64{2, 500},
			},
		},
		{
			name: "the windows refuse after both buckets gave", advance: 100 * time.Millisecond, replica: 1, req: "a3", amount: 1, tokens: 600,
			want: admitView{
				Refused:        RefusedWindows,
				Buckets:        []BucketResult{{Allowed: true, Remaining: 0}, {Allowed: true, Remaining: 0}},
				WindowsRefused: 1, Used: []int64{2, 500},
			},
		},
		{
			name: "the tenant's bucket refuses after the key's gave", advance: 200 * time.Millisecond, req: "a3", amount: 1, tokens: 100,
			want: admitView{
				Refused:        RefusedBucket,
				Buckets:        []BucketResult{{Allowed: true, Remaining: 1}, {RetryAfter: 700 * time.Millisecond}},
				WindowsRefused: -1, Used: []int64{2, 500},
			},
		},
		{
			name: "an ID in use", advance: time.Second, replica: 1, req: "a1", amount: 1, tokens: 100,
			want: admitView{
				Refused:        RefusedBudget,
				Buckets:        []BucketResult{{Allowed: true, Remaining: 1}, {Allowed: true, Remaining: 0}},
				WindowsAllowed: true, WindowsRefused: -1, Used: []int64{3, 600},
				Budget: ErrDuplicateReservation.Error(),
			},
		},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		res, err := replicas[st.replica].Admit(ctx, admission(st.req, st.amount, st.tokens))
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, viewAdmission("acme", res)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, diff)
		}
	}
	wantView(t, replicas[1], daily, budgetView{0, 100_000, 900_000})

	t.Run("an admission without a reservation checks only the limits", func(t *testing.T) {
		clock.Advance(time.Minute) // a new window
		a := admission("", 0, 10)
		a.ID, a.Lines, a.Amount, a.TTL = ReservationID{}, nil, 0, 0
		res, err := replicas[1].Admit(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		want := admitView{
			Buckets:        []BucketResult{{Allowed: true, Remaining: 1}, {Allowed: true, Remaining: 2}},
			WindowsAllowed: true, WindowsRefused: -1, Used: []int64{1, 10},
		}
		if diff := cmp.Diff(want, viewAdmission("acme", res)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a provider's windows are added whatever the admission answers", func(t *testing.T) {
		a := admission("a6", 1, 10)
		a.Buckets = []Bucket{{Name: "tenant:acme/key:none", ReplenishRate: 1, BurstCapacity: 0}} // refuses everything
		a.Provider = &WindowsCall{Group: "provider:pa", Lines: []WindowLine{{Name: "rpm", Limit: 5, Size: time.Minute, Amount: 1}}}
		for i, want := range []int64{1, 2} {
			res, err := replicas[i].Admit(ctx, a)
			if err != nil || res.ProviderErr != nil {
				t.Fatal(err, res.ProviderErr)
			}
			if got := viewAdmission("acme", res); got.Refused != RefusedBucket || !got.ProviderOK || got.ProviderUsed[0] != want {
				t.Errorf("admission %d: %+v; want refused by a bucket and the provider counting %d", i+1, got, want)
			}
		}
	})
	t.Run("the governor's hour", func(t *testing.T) {
		settle(t, replicas[0], true, "a1", 40_000, OutcomeCommitted, nil)
		a := admission("a5", 10_000, 10)
		a.Buckets, a.Windows = nil, nil
		res, err := replicas[0].Admit(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		want := []LineState{lineState(1_000_000, 40_000, 10_000, 13, 40_000), lineState(300_000, 40_000, 10_000, 13, 0)}
		if diff := cmp.Diff(want, res.Lines); diff != "" {
			t.Errorf("lines (-want +got):\n%s", diff)
		}
	})
}

// testAdmitMatchesSeparateCalls drives two tenants with the same limits
// through the same random traffic: one with Admit and Settle, the other
// with the TakeTokens, AddWindows, Reserve, AdjustWindow, Commit and
// Release calls they stand for. Every answer and the state left must be
// the same: buckets, windows rolling over, budgets refusing, reservations
// expiring and committed late.
func testAdmitMatchesSeparateCalls(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	combined, separate := newReplica(clock), newReplica(clock)
	type limits struct {
		buckets []Bucket
		windows []WindowLine
		lines   []BudgetLine
	}
	limitsOf := func(tenant string) limits {
		ten, key := Scope{Tenant: tenant}, Scope{Tenant: tenant, Key: "k1"}
		return limits{
			buckets: []Bucket{
				{Name: key.String(), ReplenishRate: 4, BurstCapacity: 3},
				{Name: ten.String(), ReplenishRate: 2.5, BurstCapacity: 6},
			},
			windows: []WindowLine{
				{Name: "key:k1/rpm", Limit: 20, Size: time.Minute, Amount: 1},
				{Name: "tpm", Limit: 5000, Size: time.Minute},
			},
			lines: []BudgetLine{
				{Scope: ten, Period: Daily, Limit: 2_000_000},
				{Scope: key, Period: Monthly, Limit: 1_500_000},
			},
		}
	}
	a, b := limitsOf("acme"), limitsOf("twin")
	type inFlight struct {
		req      string
		reserved bool
		tokens   int64
		refs     [2][]WindowRef // combined, separate: the tpm windows charged
	}
	var flying []inFlight
	stages, outcomes := map[Stage]int{}, map[Outcome]int{}
	rng := rand.New(rand.NewPCG(5, 11))
	for step := range 400 {
		clock.Advance(time.Duration(rng.IntN(400)) * time.Millisecond)
		req := "r" + strconv.Itoa(step)
		tokens := 1 + rng.Int64N(600)
		amount := 10_000 + rng.Int64N(200_000)
		ttl := []time.Duration{time.Second, time.Minute}[rng.IntN(2)]
		withWindows := append([]WindowLine(nil), a.windows...)
		withWindows[1].Amount = tokens

		provider := []WindowLine{{Name: "rpm", Limit: 30, Size: time.Minute, Amount: 1}, {Name: "tpm", Limit: 8000, Size: time.Minute, Amount: tokens}}
		got, err := combined.Admit(ctx, Admission{
			Tenant: "acme", Buckets: a.buckets, Group: "tenant:acme", Windows: withWindows,
			ID: ReservationID{Tenant: "acme", Request: req}, Lines: a.lines, Amount: amount, TTL: ttl,
			Provider: &WindowsCall{Group: "provider:acme-pa", Lines: provider},
		})
		if err != nil {
			t.Fatal(err)
		}
		want, wantRefs := admitSeparately(t, separate, "twin", req, b.buckets, withWindows, b.lines, amount, ttl, provider)
		if diff := cmp.Diff(viewAdmission("twin", want), viewAdmission("acme", got)); diff != "" {
			t.Fatalf("step %d: Admit differs from separate calls (-separate +admit):\n%s", step, diff)
		}
		stages[got.Refused]++
		if !got.Provider.Allowed {
			stages[255]++ // the provider refused
		}
		if got.Refused == Admitted || got.Refused == RefusedBudget {
			flying = append(flying, inFlight{req: req, reserved: got.Refused == Admitted, tokens: tokens,
				refs: [2][]WindowRef{{got.Windows.Lines[1].Ref}, wantRefs}})
		}
		for len(flying) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(flying))
			f := flying[i]
			flying = append(flying[:i], flying[i+1:]...)
			used := rng.Int64N(f.tokens + 1)
			release := !f.reserved || rng.IntN(4) == 0
			actual := rng.Int64N(amount + 1)
			gotOut, gotErr := settleCombined(ctx, combined, "acme", f.req, f.reserved, release, actual, f.refs[0][0], used-f.tokens)
			wantOut, wantErr := settleSeparately(ctx, separate, "twin", f.req, f.reserved, release, actual, f.refs[1][0], used-f.tokens)
			if gotErr != nil || wantErr != nil || gotOut != wantOut {
				t.Fatalf("step %d: Settle gave %+v, %v; separate calls %+v, %v", step, gotOut, gotErr, wantOut, wantErr)
			}
			outcomes[gotOut.Outcome]++
		}
	}
	// The traffic must have met every refusal and every way a reservation
	// ends, or the comparison proved less than it claims.
	for _, st := range []Stage{Admitted, RefusedBucket, RefusedWindows, RefusedBudget, 255} {
		if stages[st] == 0 {
			t.Errorf("no admission ended at stage %d", st)
		}
	}
	for _, o := range []Outcome{OutcomeCommitted, OutcomeReleased, OutcomeLateCommit, OutcomeAlreadyExpired} {
		if outcomes[o] == 0 {
			t.Errorf("no settlement was %s", o)
		}
	}
	for i := range a.lines {
		if got, want := view(t, combined, a.lines[i]), view(t, separate, b.lines[i]); got != want {
			t.Errorf("%s %s at the end: %+v, separate calls %+v", a.lines[i].Scope, a.lines[i].Period, got, want)
		}
	}
}

// admitSeparately is an Admission made of the calls it stands for. A
// refusing bucket's headers come from a read of the windows (amounts 0).
func admitSeparately(t *testing.T, s Store, tenant, req string, buckets []Bucket, windows []WindowLine, lines []BudgetLine, amount int64, ttl time.Duration, provider []WindowLine) (AdmissionResult, []WindowRef) {
	t.Helper()
	ctx := context.Background()
	group := "tenant:" + tenant
	var res AdmissionResult
	var err error
	if res.Provider, err = s.AddWindows(ctx, "provider:"+tenant+"-pa", provider); err != nil {
		t.Fatal(err)
	}
	for _, b := range buckets {
		r, err := s.TakeTokens(ctx, b, 1)
		if err != nil {
			t.Fatal(err)
		}
		res.Buckets = append(res.Buckets, r)
		if !r.Allowed {
			res.Refused = RefusedBucket
			break
		}
	}
	if res.Refused == RefusedBucket {
		peek := append([]WindowLine(nil), windows...)
		for i := range peek {
			peek[i].Amount = 0
		}
		w, err := s.AddWindows(ctx, group, peek)
		if err != nil {
			t.Fatal(err)
		}
		res.Windows = WindowResult{Refused: -1, Lines: w.Lines}
		return res, nil
	}
	w, err := s.AddWindows(ctx, group, windows)
	if err != nil {
		t.Fatal(err)
	}
	res.Windows = w
	if !w.Allowed {
		res.Refused = RefusedWindows
		return res, nil
	}
	id := ReservationID{Tenant: tenant, Request: req}
	res.Budget = s.Reserve(ctx, id, lines, amount, ttl)
	if res.Budget != nil && !errors.Is(res.Budget, ErrBudgetExceeded) {
		t.Fatal(res.Budget)
	}
	for _, l := range lines {
		st, err := s.Budget(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		res.Lines = append(res.Lines, lineState(l.Limit, st.Spent, st.Reserved, st.CurrentHour, st.Hourly[st.CurrentHour]))
	}
	if res.Budget != nil {
		res.Refused = RefusedBudget
	}
	return res, []WindowRef{w.Lines[1].Ref}
}

// settleView is a settlement's outcome and the answer of its one delta.
type settleView struct {
	Outcome Outcome
	Applied bool
}

func settleCombined(ctx context.Context, s Store, tenant, req string, reserved, release bool, actual int64, ref WindowRef, delta int64) (settleView, error) {
	st := Settlement{Windows: []WindowDelta{{Ref: ref, Delta: delta}}}
	if reserved {
		st.ID, st.Release, st.Actual = ReservationID{Tenant: tenant, Request: req}, release, actual
	}
	res, err := s.Settle(ctx, st)
	return settleView{res.Outcome, res.Applied[0]}, err
}

func settleSeparately(ctx context.Context, s Store, tenant, req string, reserved, release bool, actual int64, ref WindowRef, delta int64) (settleView, error) {
	var v settleView
	var err error
	if v.Applied, err = s.AdjustWindow(ctx, ref, delta); err != nil || !reserved {
		return v, err
	}
	id := ReservationID{Tenant: tenant, Request: req}
	if release {
		v.Outcome, err = s.Release(ctx, id)
	} else {
		v.Outcome, err = s.Commit(ctx, id, actual)
	}
	return v, err
}

// testSettle settles reservations with window deltas of their own tenant
// and of a provider's group, which on Redis travel outside the
// reservation's script.
func testSettle(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	a, b := newReplica(clock), newReplica(clock)
	line := BudgetLine{Scope: acme, Period: Daily, Limit: 1_000_000}
	tenantTPM := WindowLine{Name: "tpm", Limit: 10_000, Size: time.Minute, Amount: 500}
	providerTPM := WindowLine{Name: "tpm", Limit: 10_000, Size: time.Minute, Amount: 500}
	admit := func(req string) WindowRef {
		t.Helper()
		res, err := a.Admit(ctx, Admission{Tenant: "acme", Group: "tenant:acme", Windows: []WindowLine{tenantTPM},
			ID: rid(req), Lines: []BudgetLine{line}, Amount: 100_000, TTL: budgetTTL})
		if err != nil || res.Refused != Admitted {
			t.Fatalf("admit %s: %+v, %v", req, res, err)
		}
		return res.Windows.Lines[0].Ref
	}
	pw, err := b.AddWindows(ctx, "provider:pa", []WindowLine{providerTPM})
	if err != nil {
		t.Fatal(err)
	}
	provider := pw.Lines[0].Ref
	used := func(s Store, group string) int64 {
		t.Helper()
		peek := tenantTPM
		peek.Amount = 0
		w, err := s.AddWindows(ctx, group, []WindowLine{peek})
		if err != nil {
			t.Fatal(err)
		}
		return w.Lines[0].Used
	}

	r1 := admit("s1")
	r2 := admit("s2")
	oldWindow := r1
	oldWindow.Start = oldWindow.Start.Add(-time.Minute)
	tests := []struct {
		name         string
		settlement   Settlement
		want         SettleResult
		wantErr      error
		wantBudget   budgetView
		wantTenant   int64 // the tenant's tpm counter after
		wantProvider int64
	}{
		{
			name:       "commit with deltas of its tenant and of a provider",
			settlement: Settlement{ID: rid("s1"), Actual: 30_000, Windows: []WindowDelta{{r1, -300}, {provider, -300}}},
			want:       SettleResult{Outcome: OutcomeCommitted, Applied: []bool{true, true}},
			wantBudget: budgetView{30_000, 100_000, 870_000}, wantTenant: 700, wantProvider: 200,
		},
		{
			name:       "settling again changes nothing but still applies its deltas",
			settlement: Settlement{ID: rid("s1"), Release: true, Windows: []WindowDelta{{r1, 5}}},
			want:       SettleResult{Outcome: OutcomeAlreadyCommitted, Applied: []bool{true}},
			wantBudget: budgetView{30_000, 100_000, 870_000}, wantTenant: 705, wantProvider: 200,
		},
		{
			name:       "release; a window that is over is not adjusted",
			settlement: Settlement{ID: rid("s2"), Release: true, Windows: []WindowDelta{{r2, -500}, {oldWindow, -1}}},
			want:       SettleResult{Outcome: OutcomeReleased, Applied: []bool{true, false}},
			wantBudget: budgetView{30_000, 0, 970_000}, wantTenant: 205, wantProvider: 200,
		},
		{
			name:       "deltas without a reservation",
			settlement: Settlement{Windows: []WindowDelta{{provider, 50}, {r1, 5}}},
			want:       SettleResult{Applied: []bool{true, true}},
			wantBudget: budgetView{30_000, 0, 970_000}, wantTenant: 210, wantProvider: 250,
		},
		{
			name:       "an unknown reservation; its deltas still apply",
			settlement: Settlement{ID: rid("nope"), Actual: 1, Windows: []WindowDelta{{r1, -10}}},
			want:       SettleResult{Applied: []bool{true}}, wantErr: ErrUnknownReservation,
			wantBudget: budgetView{30_000, 0, 970_000}, wantTenant: 200, wantProvider: 250,
		},
	}
	for _, tc := range tests {
		got, err := b.Settle(ctx, tc.settlement)
		if !errors.Is(err, tc.wantErr) {
			t.Fatalf("%s: error %v, want %v", tc.name, err, tc.wantErr)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		wantView(t, a, line, tc.wantBudget)
		if got, want := used(a, "tenant:acme"), tc.wantTenant; got != want {
			t.Errorf("%s: tenant tpm %d, want %d", tc.name, got, want)
		}
		if got, want := used(b, "provider:pa"), tc.wantProvider; got != want {
			t.Errorf("%s: provider tpm %d, want %d", tc.name, got, want)
		}
	}
}

// testConcurrentAdmit has many goroutines on two replicas admit requests
// against a contended bucket, window and budgets, and settle them with
// their window corrections. The bucket lets exactly its burst through
// (the clock stands still), the window never counts more than its limit,
// spend never passes a limit, and once everything settles nothing stays
// reserved, spend is the sum of the commits and the windows hold exactly
// what the admitted requests used.
func testConcurrentAdmit(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	replicas := []Store{newReplica(clock), newReplica(clock)}
	lines := []BudgetLine{{Scope: acme, Period: Daily, Limit: 3_000_000}, {Scope: acmeKey, Period: Monthly, Limit: 2_000_000}}
	const workers, attempts, burst, rpm = 16, 12, 150, 120
	admission := func(id ReservationID, amount, tokens int64) Admission {
		return Admission{
			Tenant: "acme", Buckets: []Bucket{{Name: "tenant:acme/key:k1", ReplenishRate: 1, BurstCapacity: burst}},
			Group: "tenant:acme",
			Windows: []WindowLine{
				{Name: "rpm", Limit: rpm, Size: time.Minute, Amount: 1},
				{Name: "tpm", Limit: 1 << 40, Size: time.Minute, Amount: tokens},
			},
			ID: id, Lines: lines, Amount: amount, TTL: time.Minute,
		}
	}
	var committed, usedTokens, granted, passedBucket, refusedBudget atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			s := replicas[w%len(replicas)]
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range attempts {
				id := rid("c" + strconv.Itoa(w) + "-" + strconv.Itoa(i))
				amount, tokens := 50_000+rng.Int64N(150_000), 100+rng.Int64N(400)
				res, err := s.Admit(ctx, admission(id, amount, tokens))
				if err != nil {
					errs <- err
					return
				}
				if res.Refused != RefusedBucket {
					passedBucket.Add(1)
				}
				if res.Refused == Admitted || res.Refused == RefusedBudget {
					if u := res.Windows.Lines[0].Used; u > rpm {
						errs <- errors.New("the requests window counted " + strconv.FormatInt(u, 10) + ", over its limit")
						return
					}
				}
				st := Settlement{}
				switch res.Refused {
				case RefusedBudget:
					refusedBudget.Add(1) // gives its window charges back
					st.Windows = []WindowDelta{{res.Windows.Lines[0].Ref, -1}, {res.Windows.Lines[1].Ref, -tokens}}
				case Admitted:
					granted.Add(1)
					used := rng.Int64N(tokens + 1)
					usedTokens.Add(used)
					st.ID, st.Windows = id, []WindowDelta{{res.Windows.Lines[1].Ref, used - tokens}}
					if rng.IntN(4) == 0 {
						st.Release = true
					} else {
						st.Actual = rng.Int64N(amount + 1)
						committed.Add(st.Actual)
					}
				default:
					continue
				}
				if _, err := s.Settle(ctx, st); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := passedBucket.Load(); got != burst {
		t.Errorf("%d admissions passed the bucket, want its burst %d", got, burst)
	}
	if refusedBudget.Load() == 0 {
		t.Errorf("no admission was refused by the budget: it was not contended")
	}
	for _, l := range lines {
		st, err := replicas[0].Budget(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		if st.Spent > l.Limit || st.Reserved != 0 || st.Spent != committed.Load() {
			t.Errorf("%s %s: spent %d, reserved %d; want the commits' %d (at most %d) and 0", l.Scope, l.Period, st.Spent, st.Reserved, committed.Load(), l.Limit)
		}
	}
	w, err := replicas[1].AddWindows(ctx, "tenant:acme", []WindowLine{{Name: "rpm", Limit: rpm, Size: time.Minute}, {Name: "tpm", Limit: 1 << 40, Size: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if got := []int64{w.Lines[0].Used, w.Lines[1].Used}; got[0] != granted.Load() || got[1] != usedTokens.Load() {
		t.Errorf("windows rpm %d, tpm %d; want the %d granted requests and the %d tokens they used", got[0], got[1], granted.Load(), usedTokens.Load())
	}
}

// TestRedisRoundTrips holds Admit and Settle to one round trip each, with
// every kind of limit, a provider's windows included.
func TestRedisRoundTrips(t *testing.T) {
	trips := &redistest.Trips{}
	client := redis.NewClient(&redis.Options{Addr: sharedRedis.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	client.AddHook(trips)
	s := NewRedis(client, Options{Prefix: isolated("trips")})
	ctx := context.Background()
	lines := []BudgetLine{{Scope: acme, Period: Daily, Limit: 1 << 40}, {Scope: acme, Period: Monthly, Limit: 1 << 40}}
	pw, err := s.AddWindows(ctx, "provider:pa", []WindowLine{{Name: "tpm", Limit: 1 << 40, Size: time.Minute, Amount: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // the first run loads the scripts and indexes the tenant
		trips.Reset()
		id := rid("trip-" + strconv.Itoa(i))
		res, err := s.Admit(ctx, Admission{
			Tenant: "acme", Buckets: []Bucket{{Name: "tenant:acme/key:k1", ReplenishRate: 100, BurstCapacity: 100}, {Name: "tenant:acme", ReplenishRate: 100, BurstCapacity: 100}},
			Group: "tenant:acme", Windows: []WindowLine{{Name: "rpm", Limit: 1000, Size: time.Minute, Amount: 1}, {Name: "tpm", Limit: 1 << 40, Size: time.Minute, Amount: 100}},
			ID: id, Lines: lines, Amount: 1_000, TTL: time.Minute,
			Provider: &WindowsCall{Group: "provider:pa", Lines: []WindowLine{{Name: "rpm", Limit: 1000, Size: time.Minute, Amount: 1}}},
		})
		if err != nil || res.Refused != Admitted || res.ProviderErr != nil {
			t.Fatalf("admit: %+v, %v", res, err)
		}
		admitTrips := trips.Count()
		trips.Reset()
		_, err = s.Settle(ctx, Settlement{ID: id, Actual: 500, Windows: []WindowDelta{{res.Windows.Lines[1].Ref, -50}, {pw.Lines[0].Ref, -50}}})
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && (admitTrips != 1 || trips.Count() != 1) {
			t.Errorf("run %d: admit took %d round trips and settle %d, want 1 and 1", i, admitTrips, trips.Count())
		}
	}
}
