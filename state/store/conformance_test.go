package store

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// t0 is a Sunday afternoon, ten seconds into a minute.
var t0 = time.Date(2026, 3, 15, 13, 20, 10, 0, time.UTC)

// testTallies: replicas add to one series' entries, which halve every
// half-life after their last add, survive a replica's end, and go when
// dropped or when the series' ttl passes without an add.
func testTallies(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	a, b := newReplica(clock), newReplica(clock)
	const hl = time.Hour
	add := func(s Store, series string, ts ...Tally) {
		t.Helper()
		if err := s.AddTallies(ctx, series, ts, hl, 24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	read := func(s Store, series string) map[string][]float64 {
		t.Helper()
		got, err := s.Tallies(ctx, series, hl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]float64{}
		for _, g := range got {
			out[g.Name] = g.Sums
		}
		return out
	}
	approx := cmpopts.EquateApprox(1e-12, 1e-9)
	add(a, "chat/acme", Tally{Name: "web/00ff", Sums: []float64{4, 1}}, Tally{Name: "bot/", Sums: []float64{2}})
	add(b, "chat/acme", Tally{Name: "web/00ff", Sums: []float64{4, 1}})
	add(b, "chat/other", Tally{Name: "web/00ff", Sums: []float64{100}})
	if diff := cmp.Diff(map[string][]float64{"web/00ff": {8, 2}, "bot/": {2}}, read(a, "chat/acme"), approx); diff != "" {
		t.Errorf("both replicas' adds (-want +got):\n%s", diff)
	}
	clock.Advance(hl) // everything halves; an add decays the old sums first
	add(a, "chat/acme", Tally{Name: "web/00ff", Sums: []float64{1, 0, 3}})
	if diff := cmp.Diff(map[string][]float64{"web/00ff": {5, 1, 3}, "bot/": {1}}, read(b, "chat/acme"), approx); diff != "" {
		t.Errorf("an hour later (-want +got):\n%s", diff)
	}
	got, err := b.Tallies(ctx, "chat/acme", hl)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		want := t0
		if g.Name == "web/00ff" {
			want = t0.Add(hl)
		}
		if !g.At.Equal(want) {
			t.Errorf("%s last added %v, want %v", g.Name, g.At, want)
		}
	}
	if err := b.DropTallies(ctx, "chat/acme", []string{"bot/", "never"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]float64{"web/00ff": {5, 1, 3}}, read(a, "chat/acme"), approx); diff != "" {
		t.Errorf("after a drop (-want +got):\n%s", diff)
	}
	clock.Advance(25 * time.Hour) // chat/other was last added to 26 h ago
	if got := read(a, "chat/other"); len(got) != 0 {
		t.Errorf("after the series' ttl: %v, want nothing", got)
	}
	if got := read(a, "never-written"); len(got) != 0 {
		t.Errorf("unknown series: %v, want nothing", got)
	}
	for _, bad := range []struct {
		name     string
		series   string
		adds     []Tally
		halfLife time.Duration
	}{
		{"no series", "", nil, hl},
		{"brace", "s{x}", nil, hl},
		{"no half-life", "s", nil, 0},
		{"no name", "s", []Tally{{Sums: []float64{1}}}, hl},
		{"no sums", "s", []Tally{{Name: "x"}}, hl},
		{"too many sums", "s", []Tally{{Name: "x", Sums: make([]float64, 17)}}, hl},
		{"not a number", "s", []Tally{{Name: "x", Sums: []float64{math.NaN()}}}, hl},
	} {
		if err := a.AddTallies(ctx, bad.series, bad.adds, bad.halfLife, time.Hour); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", bad.name, err)
		}
	}
}

func TestMemoryConformance(t *testing.T) { runConformance(t, memoryBackend) }

func TestRedisConformance(t *testing.T) { runConformance(t, redisBackend) }

// runConformance is the one suite both stores must pass.
func runConformance(t *testing.T, newBackend backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, newReplica func(Clock) Store)
	}{
		{"token bucket accuracy", testBucketAccuracy},
		{"token bucket steps", testBucketSteps},
		{"window counters", testWindows},
		{"reserve commit release", testReserveCommitRelease},
		{"amounts past float precision", testLargeAmounts},
		{"multi-line all or nothing", testAllOrNothing},
		{"reservation ttl expiry", testExpiry},
		{"sweep", testSweep},
		{"budget periods and hourly slots", testPeriods},
		{"invalid arguments", testInvalid},
		{"key lifecycle", testKeyLifecycle},
		{"health and drills", testHealth},
		{"sketch board", testSketches},
		{"tally board", testTallies},
		{"concurrent reservations across replicas", testConcurrentReserve},
		{"admission step by step", testAdmit},
		{"admission matches the separate calls", testAdmitMatchesSeparateCalls},
		{"settlement with window deltas", testSettle},
		{"concurrent admissions across replicas", testConcurrentAdmit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newBackend(t)) })
	}
}

// testBucketAccuracy drives a bucket for a few simulated seconds and counts
// what it let through: the burst plus the rate times the elapsed time.
func testBucketAccuracy(t *testing.T, newReplica func(Clock) Store) {
	tests := []struct {
		name        string
		bucket      Bucket
		requested   int64
		step, span  time.Duration
		wantAllowed int
	}{
		{"10/s burst 20 over 5s", Bucket{Name: "a", ReplenishRate: 10, BurstCapacity: 20}, 1, 10 * time.Millisecond, 5 * time.Second, 70},
		{"2.5/s burst 5, 2 per call, over 4s", Bucket{Name: "b", ReplenishRate: 2.5, BurstCapacity: 5}, 2, 100 * time.Millisecond, 4 * time.Second, 7},
		{"100/s burst 100, 3 per call, over 2s", Bucket{Name: "c", ReplenishRate: 100, BurstCapacity: 100}, 3, time.Millisecond, 2 * time.Second, 100},
		{"burst 0 refuses everything", Bucket{Name: "d", ReplenishRate: 1, BurstCapacity: 0}, 1, 100 * time.Millisecond, 2 * time.Second, 0},
		{"request above burst never fits", Bucket{Name: "e", ReplenishRate: 5, BurstCapacity: 3}, 4, 100 * time.Millisecond, 2 * time.Second, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock(t0)
			s := newReplica(clock)
			got := 0
			for elapsed := time.Duration(0); elapsed <= tc.span; elapsed += tc.step {
				res, err := s.TakeTokens(context.Background(), tc.bucket, tc.requested)
				if err != nil {
					t.Fatal(err)
				}
				if res.Allowed {
					got++
				}
				clock.Advance(tc.step)
			}
			if got != tc.wantAllowed {
				t.Errorf("allowed %d calls, want %d", got, tc.wantAllowed)
			}
		})
	}
}

// testBucketSteps checks each answer: remaining tokens, retry-after, that a
// refusal takes nothing, and that a second replica sees the same bucket.
func testBucketSteps(t *testing.T, newReplica func(Clock) Store) {
	clock := newFakeClock(t0)
	replicas := []Store{newReplica(clock), newReplica(clock)}
	b := Bucket{Name: "tenant:acme/key:web", ReplenishRate: 10, BurstCapacity: 2}
	steps := []struct {
		name      string
		advance   time.Duration
		replica   int
		requested int64
		want      BucketResult
	}{
		{"full bucket", 0, 0, 2, BucketResult{Allowed: true, Remaining: 0}},
		{"empty: retry after one token", 0, 1, 1, BucketResult{RetryAfter: 100 * time.Millisecond}},
		{"half a token later", 50 * time.Millisecond, 0, 1, BucketResult{RetryAfter: 50 * time.Millisecond}},
		{"a token later", 50 * time.Millisecond, 1, 1, BucketResult{Allowed: true}},
		{"refill caps at burst", time.Hour, 0, 1, BucketResult{Allowed: true, Remaining: 1}},
		{"two wanted, one there", 0, 1, 2, BucketResult{Remaining: 1, RetryAfter: 100 * time.Millisecond}},
		{"refusal took nothing", 0, 0, 1, BucketResult{Allowed: true, Remaining: 0}},
		{"above burst: no wait helps", time.Hour, 1, 3, BucketResult{Remaining: 2}},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		got, err := replicas[st.replica].TakeTokens(context.Background(), b, st.requested)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s: result mismatch (-want +got):\n%s", st.name, diff)
		}
	}
}

func testWindows(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	replicas := []Store{newReplica(clock), newReplica(clock)}
	lines := func(tokens int64) []WindowLine {
		return []WindowLine{
			{Name: "rpm", Limit: 3, Size: time.Minute, Amount: 1},
			{Name: "tpm", Limit: 1000, Size: time.Minute, Amount: tokens},
		}
	}
	type line struct {
		Used, Remaining int64
		ResetIn         time.Duration
	}
	type result struct {
		Allowed bool
		Refused int
		Lines   []line
	}
	var refs []WindowRef
	add := func(replica int, tokens int64) result {
		t.Helper()
		res, err := replicas[replica].AddWindows(ctx, "tenant:acme", lines(tokens))
		if err != nil {
			t.Fatal(err)
		}
		out := result{Allowed: res.Allowed, Refused: res.Refused}
		for _, l := range res.Lines {
			out.Lines = append(out.Lines, line{l.Used, l.Remaining, l.ResetIn})
			if l.Limit == 0 {
				t.Errorf("line without its limit: %+v", l)
			}
		}
		refs = []WindowRef{res.Lines[0].Ref, res.Lines[1].Ref}
		return out
	}
	adjust := func(ref WindowRef, delta int64, want bool) {
		t.Helper()
		got, err := replicas[1].AdjustWindow(ctx, ref, delta)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("AdjustWindow(%s, %d) = %v, want %v", ref.Name, delta, got, want)
		}
	}
	check := func(name string, got, want result) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	reset := 50 * time.Second
	check("first request", add(0, 400), result{true, -1, []line{{1, 2, reset}, {400, 600, reset}}})
	if want := t0.Truncate(time.Minute); !refs[1].Start.Equal(want) {
		t.Errorf("window start %v, want %v", refs[1].Start, want)
	}
	check("tokens refuse, requests not charged", add(1, 700), result{false, 1, []line{{1, 2, reset}, {400, 600, reset}}})
	adjust(refs[1], -300, true) // the first answer used 100 tokens, not 400
	clock.Advance(time.Second)
	reset -= time.Second
	check("fits after the adjustment", add(0, 700), result{true, -1, []line{{2, 1, reset}, {800, 200, reset}}})
	lastRefs := refs
	check("requests fill up", add(1, 0), result{true, -1, []line{{3, 0, reset}, {800, 200, reset}}})
	check("requests refuse", add(0, 0), result{false, 0, []line{{3, 0, reset}, {800, 200, reset}}})
	adjust(lastRefs[1], 250, true) // that answer used 950: over the limit, still recorded
	check("over-charged tokens show", add(1, 0), result{false, 0, []line{{3, 0, reset}, {1050, 0, reset}}})
	clock.Advance(reset)
	check("next window", add(1, 10), result{true, -1, []line{{1, 2, time.Minute}, {10, 990, time.Minute}}})
	adjust(lastRefs[1], 10, false) // its window is over
}

var (
	acme      = Scope{Tenant: "acme"}
	acmeWeb   = Scope{Tenant: "acme", App: "web"}
	acmeKey   = Scope{Tenant: "acme", Key: "k1"}
	rid       = func(s string) ReservationID { return ReservationID{Tenant: "acme", Request: s} }
	budgetTTL = time.Minute
)

// budgetView is the part of BudgetState the tests compare.
type budgetView struct{ Spent, Reserved, Remaining int64 }

func view(t *testing.T, s Store, line BudgetLine) budgetView {
	t.Helper()
	st, err := s.Budget(context.Background(), line)
	if err != nil {
		t.Fatal(err)
	}
	return budgetView{st.Spent, st.Reserved, st.Remaining}
}

func wantView(t *testing.T, s Store, line BudgetLine, want budgetView) {
	t.Helper()
	if got := view(t, s, line); got != want {
		t.Errorf("budget %s %s = %+v, want %+v", line.Scope, line.Period, got, want)
	}
}

func settle(t *testing.T, s Store, commit bool, id string, actual int64, want Outcome, wantErr error) {
	t.Helper()
	var got Outcome
	var err error
	if commit {
		got, err = s.Commit(context.Background(), rid(id), actual)
	} else {
		got, err = s.Release(context.Background(), rid(id))
	}
	if !errors.Is(err, wantErr) {
		t.Fatalf("settle %s: error %v, want %v", id, err, wantErr)
	}
	if got != want {
		t.Errorf("settle %s (commit=%v): outcome %s, want %s", id, commit, got, want)
	}
}

func testReserveCommitRelease(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	a, b := newReplica(clock), newReplica(clock)
	line := BudgetLine{Scope: acme, Period: Daily, Limit: 5_000_000}
	reserve := func(s Store, id string, amount int64) error {
		return s.Reserve(ctx, rid(id), []BudgetLine{line}, amount, budgetTTL)
	}

	if err := reserve(a, "r1", 1_500_000); err != nil {
		t.Fatal(err)
	}
	wantView(t, b, line, budgetView{0, 1_500_000, 3_500_000})
	settle(t, b, true, "r1", 1_200_000, OutcomeCommitted, nil)
	wantView(t, a, line, budgetView{1_200_000, 0, 3_800_000})

	t.Run("double commit and release after commit are no-ops", func(t *testing.T) {
		settle(t, a, true, "r1", 1_200_000, OutcomeAlreadyCommitted, nil)
		settle(t, b, false, "r1", 0, OutcomeAlreadyCommitted, nil)
		wantView(t, a, line, budgetView{1_200_000, 0, 3_800_000})
	})
	t.Run("over-commit records the actual cost", func(t *testing.T) {
		if err := reserve(a, "r2", 500_000); err != nil {
			t.Fatal(err)
		}
		settle(t, a, true, "r2", 900_000, OutcomeCommitted, nil)
		wantView(t, b, line, budgetView{2_100_000, 0, 2_900_000})
	})
	t.Run("release gives everything back once", func(t *testing.T) {
		if err := reserve(b, "r3", 2_000_000); err != nil {
			t.Fatal(err)
		}
		wantView(t, a, line, budgetView{2_100_000, 2_000_000, 900_000})
		settle(t, a, false, "r3", 0, OutcomeReleased, nil)
		settle(t, b, false, "r3", 0, OutcomeAlreadyReleased, nil)
		settle(t, b, true, "r3", 10, OutcomeAlreadyReleased, nil)
		wantView(t, a, line, budgetView{2_100_000, 0, 2_900_000})
	})
	t.Run("refusal names the line and what remains", func(t *testing.T) {
		err := reserve(a, "r4", 3_000_000)
		var be *BudgetExceededError
		if !errors.As(err, &be) || !errors.Is(err, ErrBudgetExceeded) {
			t.Fatalf("got %v, want a *BudgetExceededError", err)
		}
		want := BudgetExceededError{Line: line, Remaining: 2_900_000, Requested: 3_000_000}
		if diff := cmp.Diff(want, *be); diff != "" {
			t.Errorf("refusal (-want +got):\n%s", diff)
		}
		// The refused ID was never reserved.
		settle(t, a, true, "r4", 1, 0, ErrUnknownReservation)
	})
	t.Run("exact fit is allowed, one more is not", func(t *testing.T) {
		if err := reserve(b, "r5", 2_900_001); !errors.Is(err, ErrBudgetExceeded) {
			t.Fatalf("reserve one over: got %v, want ErrBudgetExceeded", err)
		}
		if err := reserve(a, "r5", 2_900_000); err != nil {
			t.Fatal(err)
		}
		wantView(t, b, line, budgetView{2_100_000, 2_900_000, 0})
		settle(t, b, true, "r5", 0, OutcomeCommitted, nil)
	})
	t.Run("a reservation of nothing commits and releases", func(t *testing.T) {
		// The Spooler's Record opens one to commit spend no reservation
		// covered.
		own := BudgetLine{Scope: acmeKey, Period: Daily, Limit: 1_000}
		for _, id := range []string{"zero-commit", "zero-release"} {
			if err := a.Reserve(ctx, rid(id), []BudgetLine{own}, 0, budgetTTL); err != nil {
				t.Fatal(err)
			}
		}
		settle(t, b, true, "zero-commit", 40, OutcomeCommitted, nil)
		settle(t, b, false, "zero-release", 0, OutcomeReleased, nil)
		wantView(t, a, own, budgetView{40, 0, 960})
	})
	t.Run("unknown IDs", func(t *testing.T) {
		settle(t, a, true, "nope", 5, 0, ErrUnknownReservation)
		settle(t, b, false, "nope", 0, 0, ErrUnknownReservation)
	})
	t.Run("an ID is used once", func(t *testing.T) {
		for _, id := range []string{"r1", "r3"} {
			if err := reserve(b, id, 1); !errors.Is(err, ErrDuplicateReservation) {
				t.Errorf("reserve %s again: got %v, want ErrDuplicateReservation", id, err)
			}
		}
		if err := reserve(a, "r6", 1); err != nil {
			t.Fatal(err)
		}
		if err := reserve(b, "r6", 1); !errors.Is(err, ErrDuplicateReservation) {
			t.Errorf("reserve live r6 again: got %v, want ErrDuplicateReservation", err)
		}
		wantView(t, a, line, budgetView{2_100_000, 1, 2_899_999})
	})
}

// testLargeAmounts: amounts are integer micro-USD up to 2^53; the
// counters must move by exactly the amount at the top of that range too.
func testLargeAmounts(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	s := newReplica(clock)
	const amount = 1<<51 + 1
	line := BudgetLine{Scope: acme, Period: Monthly, Limit: maxExact}
	for _, id := range []string{"big1", "big2"} {
		if err := s.Reserve(ctx, rid(id), []BudgetLine{line}, amount, budgetTTL); err != nil {
			t.Fatal(err)
		}
	}
	settle(t, s, false, "big1", 0, OutcomeReleased, nil)
	wantView(t, s, line, budgetView{0, amount, line.Limit - amount})
	settle(t, s, true, "big2", amount+1, OutcomeCommitted, nil)
	wantView(t, s, line, budgetView{amount + 1, 0, line.Limit - amount - 1})
	if err := s.Reserve(ctx, rid("big3"), []BudgetLine{line}, amount, budgetTTL); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * budgetTTL) // the reservation expires and gives its amount back
	wantView(t, s, line, budgetView{amount + 1, 0, line.Limit - amount - 1})
}

func testAllOrNothing(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	s := newReplica(newFakeClock(t0))
	tenantDaily := BudgetLine{Scope: acme, Period: Daily, Limit: 10_000_000}
	tenantMonthly := BudgetLine{Scope: acme, Period: Monthly, Limit: 100_000_000}
	app := BudgetLine{Scope: acmeWeb, Period: Daily, Limit: 1_000_000}
	key := BudgetLine{Scope: acmeKey, Period: Monthly, Limit: 3_000_000}
	all := []BudgetLine{tenantDaily, tenantMonthly, app, key}

	if err := s.Reserve(ctx, rid("ok"), all, 600_000, budgetTTL); err != nil {
		t.Fatal(err)
	}
	err := s.Reserve(ctx, rid("too-much"), all, 500_000, budgetTTL)
	var be *BudgetExceededError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a *BudgetExceededError", err)
	}
	if be.Line != app || be.Remaining != 400_000 {
		t.Errorf("refused by %s %s with %d remaining, want %s %s with 400000", be.Line.Scope, be.Line.Period, be.Remaining, app.Scope, app.Period)
	}
	for _, l := range all {
		wantView(t, s, l, budgetView{0, 600_000, l.Limit - 600_000})
	}
	settle(t, s, true, "ok", 250_000, OutcomeCommitted, nil)
	for _, l := range all {
		wantView(t, s, l, budgetView{250_000, 0, l.Limit - 250_000})
	}
}

func testExpiry(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	a, b := newReplica(clock), newReplica(clock)
	line := BudgetLine{Scope: acme, Period: Daily, Limit: 1_000_000}
	lines := []BudgetLine{line}

	// A replica reserves and crashes.
	if err := a.Reserve(ctx, rid("crashed"), lines, 800_000, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.Reserve(ctx, rid("next"), lines, 500_000, 30*time.Second); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("got %v, want ErrBudgetExceeded while the crashed reservation holds", err)
	}
	clock.Advance(30*time.Second - time.Millisecond)
	wantView(t, b, line, budgetView{0, 800_000, 200_000})
	clock.Advance(time.Millisecond)
	// No sweep ran: Reserve itself expires what is due.
	if err := b.Reserve(ctx, rid("next"), lines, 500_000, 30*time.Second); err != nil {
		t.Fatalf("reserve after the TTL: %v", err)
	}
	wantView(t, a, line, budgetView{0, 500_000, 500_000})

	settle(t, a, false, "crashed", 0, OutcomeAlreadyExpired, nil)
	// The crashed request did finish after all: its cost is recorded.
	settle(t, a, true, "crashed", 300_000, OutcomeLateCommit, nil)
	settle(t, b, true, "crashed", 300_000, OutcomeAlreadyCommitted, nil)
	wantView(t, b, line, budgetView{300_000, 500_000, 200_000})

	// A reservation past its TTL but not yet expired commits normally.
	clock.Advance(time.Minute)
	settle(t, b, true, "next", 100_000, OutcomeCommitted, nil)
	wantView(t, a, line, budgetView{400_000, 0, 600_000})
}

func testSweep(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	s := newReplica(clock)
	acmeLine := BudgetLine{Scope: acme, Period: Monthly, Limit: 10_000_000}
	globex := BudgetLine{Scope: Scope{Tenant: "globex"}, Period: Daily, Limit: 10_000_000}
	for i, tc := range []struct {
		line BudgetLine
		ttl  time.Duration
	}{{acmeLine, 10 * time.Second}, {acmeLine, 20 * time.Second}, {globex, 10 * time.Second}, {globex, time.Hour}} {
		id := ReservationID{Tenant: tc.line.Scope.Tenant, Request: "s" + strconv.Itoa(i)}
		if err := s.Reserve(ctx, id, []BudgetLine{tc.line}, 1_000, tc.ttl); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		advance time.Duration
		want    int
	}{{5 * time.Second, 0}, {5 * time.Second, 2}, {5 * time.Second, 0}, {5 * time.Second, 1}, {time.Hour, 1}, {time.Hour, 0}}
	for i, st := range steps {
		clock.Advance(st.advance)
		got, err := s.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != st.want {
			t.Errorf("sweep %d: expired %d, want %d", i, got, st.want)
		}
	}
	wantView(t, s, acmeLine, budgetView{0, 0, 10_000_000})
	wantView(t, s, globex, budgetView{0, 0, 10_000_000})
}

func testPeriods(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(time.Date(2026, 3, 31, 13, 50, 0, 0, time.UTC))
	s := newReplica(clock)
	daily := BudgetLine{Scope: acme, Period: Daily, Limit: 10_000_000}
	monthly := BudgetLine{Scope: acme, Period: Monthly, Limit: 100_000_000}
	spend := func(id string, reserve, actual int64, commitAfter time.Duration) {
		t.Helper()
		if err := s.Reserve(ctx, rid(id), []BudgetLine{daily, monthly}, reserve, time.Hour); err != nil {
			t.Fatal(err)
		}
		clock.Advance(commitAfter)
		settle(t, s, true, id, actual, OutcomeCommitted, nil)
	}
	state := func(line BudgetLine) BudgetState {
		t.Helper()
		st, err := s.Budget(ctx, line)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	spend("h13", 300_000, 200_000, 15*time.Minute) // reserved at 13:50, committed 14:05: counts in hour 13
	spend("h14", 300_000, 50_000, 0)
	var wantHourly [24]int64
	wantHourly[13], wantHourly[14] = 200_000, 50_000
	st := state(daily)
	want := BudgetState{
		PeriodStart: time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC),
		Spent:       250_000, Remaining: 9_750_000, Hourly: wantHourly, CurrentHour: 14,
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("daily state (-want +got):\n%s", diff)
	}

	clock.Set(time.Date(2026, 3, 31, 23, 59, 59, 0, time.UTC))
	if err := s.Reserve(ctx, rid("midnight"), []BudgetLine{daily, monthly}, 1_000_000, time.Hour); err != nil {
		t.Fatal(err)
	}
	clock.Set(time.Date(2026, 4, 1, 0, 0, 1, 0, time.UTC))
	// A new day and month: fresh counters; the reservation held the old ones.
	st = state(daily)
	if st.Spent != 0 || st.Reserved != 0 || st.Hourly != [24]int64{} || st.CurrentHour != 0 || !st.PeriodStart.Equal(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("new day state %+v, want empty counters starting 2026-04-01", st)
	}
	settle(t, s, true, "midnight", 400_000, OutcomeCommitted, nil)
	clock.Set(time.Date(2026, 3, 31, 23, 59, 59, 0, time.UTC)) // look back at March 31
	st = state(daily)
	if st.Spent != 650_000 || st.Reserved != 0 || st.Hourly[23] != 400_000 {
		t.Errorf("March 31 after the late commit: %+v, want spent 650000, reserved 0, hour 23 400000", st)
	}
	clock.Set(time.Date(2026, 4, 20, 9, 0, 0, 0, time.UTC))
	spend("april", 100_000, 70_000, 0)
	st = state(monthly)
	if st.Spent != 70_000 || !st.PeriodStart.Equal(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)) || st.Hourly != [24]int64{} {
		t.Errorf("April monthly %+v, want spent 70000 from 2026-04-01 and no hourly slots", st)
	}
}

func testInvalid(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	s := newReplica(newFakeClock(t0))
	ok := BudgetLine{Scope: acme, Period: Daily, Limit: 10}
	tests := []struct {
		name string
		call func() error
	}{
		{"bucket without rate", func() error {
			_, err := s.TakeTokens(ctx, Bucket{Name: "x", BurstCapacity: 1}, 1)
			return err
		}},
		{"bucket name with brace", func() error {
			_, err := s.TakeTokens(ctx, Bucket{Name: "a}b", ReplenishRate: 1, BurstCapacity: 1}, 1)
			return err
		}},
		{"zero tokens requested", func() error {
			_, err := s.TakeTokens(ctx, Bucket{Name: "x", ReplenishRate: 1, BurstCapacity: 1}, 0)
			return err
		}},
		{"no windows", func() error { _, err := s.AddWindows(ctx, "g", nil); return err }},
		{"window under a millisecond", func() error {
			_, err := s.AddWindows(ctx, "g", []WindowLine{{Name: "rpm", Limit: 1, Size: time.Microsecond, Amount: 1}})
			return err
		}},
		{"duplicate window", func() error {
			l := WindowLine{Name: "rpm", Limit: 1, Size: time.Second, Amount: 1}
			_, err := s.AddWindows(ctx, "g", []WindowLine{l, l})
			return err
		}},
		{"no budget lines", func() error { return s.Reserve(ctx, rid("x"), nil, 1, time.Minute) }},
		{"line of another tenant", func() error {
			return s.Reserve(ctx, rid("x"), []BudgetLine{{Scope: Scope{Tenant: "globex"}, Period: Daily, Limit: 10}}, 1, time.Minute)
		}},
		{"duplicate line", func() error { return s.Reserve(ctx, rid("x"), []BudgetLine{ok, ok}, 1, time.Minute) }},
		{"negative amount", func() error { return s.Reserve(ctx, rid("x"), []BudgetLine{ok}, -1, time.Minute) }},
		{"no ttl", func() error { return s.Reserve(ctx, rid("x"), []BudgetLine{ok}, 1, 0) }},
		{"ttl over a day", func() error { return s.Reserve(ctx, rid("x"), []BudgetLine{ok}, 1, 25*time.Hour) }},
		{"unknown period", func() error {
			return s.Reserve(ctx, rid("x"), []BudgetLine{{Scope: acme, Period: 9, Limit: 1}}, 1, time.Minute)
		}},
		{"tenant with slash", func() error {
			return s.Reserve(ctx, ReservationID{Tenant: "a/b", Request: "x"}, []BudgetLine{{Scope: Scope{Tenant: "a/b"}, Period: Daily, Limit: 1}}, 1, time.Minute)
		}},
		{"empty request id", func() error { _, err := s.Commit(ctx, ReservationID{Tenant: "acme"}, 1); return err }},
		{"negative actual", func() error { _, err := s.Commit(ctx, rid("x"), -5); return err }},
		{"hash not hex", func() error { _, err := s.Key(ctx, "sk-plaintext"); return err }},
		{"record without creation time", func() error {
			return s.PutKey(ctx, KeyRecord{Hash: HashKey("k"), Name: "n", Tenant: "acme"})
		}},
		{"empty provider", func() error { return s.SetHealth(ctx, "", "up") }},
		{"bucket of another tenant in an admission", func() error {
			_, err := s.Admit(ctx, Admission{Tenant: "acme", Buckets: []Bucket{{Name: "tenant:globex", ReplenishRate: 1, BurstCapacity: 1}}})
			return err
		}},
		{"bucket of no tenant in an admission", func() error {
			_, err := s.Admit(ctx, Admission{Tenant: "acme", Buckets: []Bucket{{Name: "acme", ReplenishRate: 1, BurstCapacity: 1}}})
			return err
		}},
		{"window group of another tenant in an admission", func() error {
			_, err := s.Admit(ctx, Admission{Tenant: "acme", Group: "tenant:acmex", Windows: []WindowLine{{Name: "rpm", Limit: 1, Size: time.Minute, Amount: 1}}})
			return err
		}},
		{"reservation of another tenant in an admission", func() error {
			_, err := s.Admit(ctx, Admission{Tenant: "acme", ID: ReservationID{Tenant: "globex", Request: "x"},
				Lines: []BudgetLine{{Scope: Scope{Tenant: "globex"}, Period: Daily, Limit: 10}}, Amount: 1, TTL: time.Minute})
			return err
		}},
		{"admission with a bad reservation ttl", func() error {
			_, err := s.Admit(ctx, Admission{Tenant: "acme", ID: rid("x"), Lines: []BudgetLine{ok}, Amount: 1})
			return err
		}},
		{"admission with a bad provider window", func() error {
			_, err := s.Admit(ctx, Admission{Tenant: "acme", Provider: &WindowsCall{Group: "provider:pa", Lines: []WindowLine{{Name: "rpm", Limit: -1, Size: time.Minute}}}})
			return err
		}},
		{"settlement with a negative actual", func() error {
			_, err := s.Settle(ctx, Settlement{ID: rid("x"), Actual: -1})
			return err
		}},
		{"settlement with a bad window", func() error {
			_, err := s.Settle(ctx, Settlement{Windows: []WindowDelta{{Ref: WindowRef{Group: "g", Name: "rpm"}, Delta: 1}}})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
		})
	}
	t.Run("a plaintext key never appears in the error", func(t *testing.T) {
		_, err := s.Key(ctx, "sk-secret-value")
		if err == nil || strings.Contains(err.Error(), "sk-secret-value") {
			t.Errorf("got %v, want an error that does not echo the key", err)
		}
	})
}

func testKeyLifecycle(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	admin, gateway := newReplica(clock), newReplica(clock)
	k1 := KeyRecord{
		Hash: HashKey("sk-sy-one"), Name: "web-prod", Tenant: "acme", App: "web",
		Models: []string{"gpt-4o", "claude-sonnet"}, Created: t0,
		Limits: KeyLimits{RequestsPerMinute: 60, DailyBudget: 5_000_000, ReplenishRate: 0.5, BurstCapacity: 3},
		Tags:   map[string]string{"team": "search", "env": "prod"},
	}
	k2 := KeyRecord{Hash: HashKey("sk-sy-two"), Name: "batch", Tenant: "acme", Created: t0.Add(time.Hour)}
	k3 := KeyRecord{Hash: HashKey("sk-sy-three"), Name: "ops", Tenant: "globex", Created: t0.Add(-time.Hour)}
	for _, k := range []KeyRecord{k2, k1, k3} {
		if err := admin.PutKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	list := func(s Store, tenant string, want ...KeyRecord) {
		t.Helper()
		got, err := s.TenantKeys(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("TenantKeys(%s) (-want +got):\n%s", tenant, diff)
		}
	}
	get := func(s Store, want KeyRecord) {
		t.Helper()
		got, err := s.Key(ctx, want.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Key(%s) (-want +got):\n%s", want.Name, diff)
		}
	}
	get(gateway, k1)
	list(gateway, "acme", k1, k2)
	list(gateway, "globex", k3)
	list(gateway, "initech")

	clock.Advance(time.Minute)
	if err := admin.RevokeKey(ctx, k1.Hash); err != nil {
		t.Fatal(err)
	}
	revoked := k1
	revoked.Revoked, revoked.RevokedAt = true, t0.Add(time.Minute)
	get(gateway, revoked) // seen by the other replica at once

	clock.Advance(time.Minute)
	if err := gateway.RevokeKey(ctx, k1.Hash); err != nil {
		t.Fatal(err)
	}
	get(admin, revoked) // the first revocation time stays

	renamed := k1
	renamed.Name, renamed.Revoked = "web-renamed", false
	if err := admin.PutKey(ctx, renamed); err != nil {
		t.Fatal(err)
	}
	revoked.Name = "web-renamed"
	get(gateway, revoked) // a put never un-revokes

	moved := k2
	moved.Tenant = "globex"
	if err := admin.PutKey(ctx, moved); err != nil {
		t.Fatal(err)
	}
	list(gateway, "acme", revoked)
	list(gateway, "globex", k3, moved)

	unknown := HashKey("never-issued")
	if _, err := gateway.Key(ctx, unknown); !errors.Is(err, ErrNotFound) {
		t.Errorf("Key(unknown): got %v, want ErrNotFound", err)
	}
	if err := admin.RevokeKey(ctx, unknown); !errors.Is(err, ErrNotFound) {
		t.Errorf("RevokeKey(unknown): got %v, want ErrNotFound", err)
	}
}

func testHealth(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	router, other := newReplica(clock), newReplica(clock)
	if _, err := other.Health(ctx, "openai"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Health before any set: got %v, want ErrNotFound", err)
	}
	steps := []struct {
		provider, state string
	}{{"openai", "degraded"}, {"anthropic", "healthy"}, {"openai", "open circuit|since 13:20"}}
	for _, st := range steps {
		clock.Advance(1500 * time.Microsecond)
		if err := router.SetHealth(ctx, st.provider, st.state); err != nil {
			t.Fatal(err)
		}
		got, err := other.Health(ctx, st.provider)
		if err != nil {
			t.Fatal(err)
		}
		want := ProviderHealth{Provider: st.provider, State: st.state, Updated: clock.Now()}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Health(%s) (-want +got):\n%s", st.provider, diff)
		}
	}
	all, err := other.Healths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantAll := []ProviderHealth{
		{Provider: "anthropic", State: "healthy", Updated: t0.Add(3000 * time.Microsecond)},
		{Provider: "openai", State: "open circuit|since 13:20", Updated: t0.Add(4500 * time.Microsecond)},
	}
	if diff := cmp.Diff(wantAll, all); diff != "" {
		t.Errorf("Healths (-want +got):\n%s", diff)
	}

	drills := []struct {
		name string
		set  bool
		p    string
		want []string
	}{
		{"first drill", true, "openai", []string{"openai"}},
		{"second drill", true, "anthropic", []string{"anthropic", "openai"}},
		{"set twice", true, "openai", []string{"anthropic", "openai"}},
		{"clear one", false, "openai", []string{"anthropic"}},
		{"clear unknown", false, "gemini", []string{"anthropic"}},
		{"clear last", false, "anthropic", []string{}},
	}
	for _, d := range drills {
		var err error
		if d.set {
			err = router.SetDrill(ctx, d.p)
		} else {
			err = router.ClearDrill(ctx, d.p)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := other.Drills(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(d.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: Drills (-want +got):\n%s", d.name, diff)
		}
	}
}

// testConcurrentReserve has many goroutines on two replicas reserve against
// small budgets, then commit or release. Reserve must never let spend pass a
// limit, and once everything settles nothing stays reserved.
func testConcurrentReserve(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	replicas := []Store{newReplica(clock), newReplica(clock)}
	tenant := BudgetLine{Scope: acme, Period: Daily, Limit: 3_000_000}
	key := BudgetLine{Scope: acmeKey, Period: Monthly, Limit: 2_000_000}
	lines := []BudgetLine{tenant, key}
	const workers, attempts = 16, 12

	var committed, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			s := replicas[w%len(replicas)]
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range attempts {
				id := rid("w" + strconv.Itoa(w) + "-" + strconv.Itoa(i))
				amount := 50_000 + rng.Int64N(150_000)
				err := s.Reserve(ctx, id, lines, amount, time.Minute)
				if errors.Is(err, ErrBudgetExceeded) {
					refused.Add(1)
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if rng.IntN(4) == 0 {
					_, err = s.Release(ctx, id)
				} else {
					actual := rng.Int64N(amount + 1)
					_, err = s.Commit(ctx, id, actual)
					committed.Add(actual)
				}
				if err != nil {
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
	if refused.Load() == 0 {
		t.Errorf("no reservation was refused: the budget was not contended")
	}
	for _, l := range lines {
		st, err := replicas[0].Budget(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		if st.Spent > l.Limit {
			t.Errorf("%s spent %d, over the limit %d", l.Scope, st.Spent, l.Limit)
		}
		if st.Reserved != 0 {
			t.Errorf("%s reserved %d after every request settled, want 0", l.Scope, st.Reserved)
		}
		if st.Spent != committed.Load() {
			t.Errorf("%s spent %d, want the sum of commits %d", l.Scope, st.Spent, committed.Load())
		}
	}
}

// testSketches shares replicas' summaries: each replica's latest write is
// read by the others, binary bytes intact, until its ttl passes.
func testSketches(t *testing.T, newReplica func(Clock) Store) {
	ctx := context.Background()
	clock := newFakeClock(t0)
	a, b := newReplica(clock), newReplica(clock)
	bin := []byte{0, 1, '|', 255, '\n', 'x'}
	if err := a.PutSketch(ctx, "chat/acme", "a", []byte("old"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := a.PutSketch(ctx, "chat/acme", "a", bin, time.Minute); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second)
	if err := b.PutSketch(ctx, "chat/acme", "b", []byte("bee"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.PutSketch(ctx, "chat/other", "b", []byte("elsewhere"), time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := b.Sketches(ctx, "chat/acme")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]byte{"a": bin, "b": []byte("bee")}, got); diff != "" {
		t.Errorf("both replicas' summaries (-want +got):\n%s", diff)
	}
	clock.Advance(31 * time.Second) // a's summary is 61 s old, b's 31 s
	got, err = a.Sketches(ctx, "chat/acme")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]byte{"b": []byte("bee")}, got); diff != "" {
		t.Errorf("after a's ttl (-want +got):\n%s", diff)
	}
	if got, err := a.Sketches(ctx, "never-written"); err != nil || len(got) != 0 {
		t.Errorf("unknown series: got %v, %v; want nothing", got, err)
	}
	for _, bad := range []struct {
		series, replica string
		ttl             time.Duration
	}{{"", "a", time.Minute}, {"s{x}", "a", time.Minute}, {"s\x00", "a", time.Minute}, {"s", "", time.Minute}, {"s", "a|b", time.Minute}, {"s", "a", 0}} {
		if err := a.PutSketch(ctx, bad.series, bad.replica, nil, bad.ttl); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutSketch(%q, %q, ttl %v): got %v, want ErrInvalid", bad.series, bad.replica, bad.ttl, err)
		}
	}
}
