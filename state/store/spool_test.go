package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/state/spool"
)

// flakyBudgets fails every Reserve and Commit with ErrUnavailable while
// down.
type flakyBudgets struct {
	Budgets
	down atomic.Bool
}

var errRefused = errors.New("dial tcp: connection refused")

func (f *flakyBudgets) Commit(ctx context.Context, id ReservationID, actual int64) (Outcome, error) {
	if f.down.Load() {
		return 0, fmt.Errorf("store commit: %w: %w", ErrUnavailable, errRefused)
	}
	return f.Budgets.Commit(ctx, id, actual)
}

func (f *flakyBudgets) Reserve(ctx context.Context, id ReservationID, lines []BudgetLine, amount int64, ttl time.Duration) error {
	if f.down.Load() {
		return fmt.Errorf("store reserve: %w: %w", ErrUnavailable, errRefused)
	}
	return f.Budgets.Reserve(ctx, id, lines, amount, ttl)
}

// TestSpoolerRecord: spend admitted during an outage, with no reservation,
// is recorded uncapped when the store is back, once even if replayed twice.
func TestSpoolerRecord(t *testing.T) {
	ctx := context.Background()
	daily := BudgetLine{Scope: acme, Period: Daily, Limit: 1_000}
	web := BudgetLine{Scope: Scope{Tenant: "acme", App: "web"}, Period: Monthly, Limit: 500}
	tests := []struct {
		name      string
		down      bool
		spent     int64 // committed on daily before the record
		actual    int64
		twice     bool
		wantOut   Outcome
		wantDaily int64
		wantWeb   int64
	}{
		{name: "store up: written at once", actual: 300, wantOut: OutcomeCommitted, wantDaily: 300, wantWeb: 300},
		{name: "store down: kept, then replayed", down: true, actual: 300, wantOut: OutcomeSpooled, wantDaily: 300, wantWeb: 300},
		{name: "past the limit still counts", spent: 900, actual: 700, wantOut: OutcomeCommitted, wantDaily: 1_600, wantWeb: 700},
		{name: "replayed twice counts once", down: true, actual: 300, twice: true, wantOut: OutcomeSpooled, wantDaily: 300, wantWeb: 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := NewMemory(Options{Clock: newFakeClock(t0)})
			flaky := &flakyBudgets{Budgets: mem}
			spool := NewSpooler(flaky, 10, nil)
			if tc.spent > 0 {
				if err := mem.Reserve(ctx, rid("earlier"), []BudgetLine{daily}, tc.spent, time.Hour); err != nil {
					t.Fatal(err)
				}
				if _, err := mem.Commit(ctx, rid("earlier"), tc.spent); err != nil {
					t.Fatal(err)
				}
			}
			flaky.down.Store(tc.down)
			out, err := spool.Record(ctx, rid("r"), []BudgetLine{daily, web}, tc.actual)
			if err != nil || out != tc.wantOut {
				t.Fatalf("Record: got %s, %v; want %s, nil", out, err, tc.wantOut)
			}
			flaky.down.Store(false)
			if tc.twice {
				spool.queue = append(spool.queue, spool.queue...)
			}
			if _, err := spool.Replay(ctx); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				line BudgetLine
				want int64
			}{{daily, tc.wantDaily}, {web, tc.wantWeb}} {
				st, err := mem.Budget(ctx, c.line)
				if err != nil {
					t.Fatal(err)
				}
				if st.Spent != c.want || st.Reserved != 0 {
					t.Errorf("%s: spent %d, reserved %d; want %d, 0", c.line.Scope, st.Spent, st.Reserved, c.want)
				}
			}
		})
	}
}

func TestSpooler(t *testing.T) {
	ctx := context.Background()
	line := BudgetLine{Scope: acme, Period: Monthly, Limit: 10_000_000}
	tests := []struct {
		name        string
		reserve     []string         // reserved before the outage
		commits     map[string]int64 // committed during the outage, in key order below
		order       []string
		limit       int
		wantSpooled int
		wantErrs    int // commits refused because the spool was full
		wantWritten int
		wantSpent   int64
		wantHeld    int64 // still reserved: a dropped commit's reservation waits for its TTL
		wantDropped map[string]float64
	}{
		{
			name: "everything replayed", reserve: []string{"a", "b"}, order: []string{"a", "b"},
			commits: map[string]int64{"a": 100, "b": 250}, limit: 10,
			wantSpooled: 2, wantWritten: 2, wantSpent: 350,
		},
		{
			name: "full spool drops and says so", reserve: []string{"a", "b", "c"}, order: []string{"a", "b", "c"},
			commits: map[string]int64{"a": 100, "b": 250, "c": 7}, limit: 2,
			wantSpooled: 2, wantErrs: 1, wantWritten: 2, wantSpent: 350, wantHeld: 1_000,
			wantDropped: map[string]float64{"spool_full": 1},
		},
		{
			name: "unknown reservation dropped on replay", reserve: []string{"a"}, order: []string{"a", "ghost"},
			commits: map[string]int64{"a": 100, "ghost": 999}, limit: 10,
			wantSpooled: 2, wantWritten: 1, wantSpent: 100,
			wantDropped: map[string]float64{"unknown_reservation": 1},
		},
		{
			name: "a commit that did land replays as a no-op", reserve: []string{"a"}, order: []string{"a", "a"},
			commits: map[string]int64{"a": 100}, limit: 10,
			wantSpooled: 2, wantWritten: 2, wantSpent: 100,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := NewMemory(Options{Clock: newFakeClock(t0)})
			flaky := &flakyBudgets{Budgets: mem}
			metrics := NewMetrics(nil)
			spool := NewSpooler(flaky, tc.limit, metrics)
			for _, id := range tc.reserve {
				if err := mem.Reserve(ctx, rid(id), []BudgetLine{line}, 1_000, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			flaky.down.Store(true)
			spooled, errs := 0, 0
			for _, id := range tc.order {
				out, err := spool.Commit(ctx, rid(id), tc.commits[id])
				switch {
				case err == nil && out == OutcomeSpooled:
					spooled++
				case errors.Is(err, ErrSpoolFull) && errors.Is(err, ErrUnavailable):
					errs++
				default:
					t.Fatalf("commit %s while down: %s, %v", id, out, err)
				}
			}
			if spooled != tc.wantSpooled || errs != tc.wantErrs {
				t.Errorf("spooled %d, refused %d; want %d, %d", spooled, errs, tc.wantSpooled, tc.wantErrs)
			}
			if n, err := spool.Replay(ctx); n != 0 || !errors.Is(err, ErrUnavailable) || spool.Len() != tc.wantSpooled {
				t.Errorf("replay while down: wrote %d, err %v, kept %d; want 0, ErrUnavailable, %d", n, err, spool.Len(), tc.wantSpooled)
			}
			flaky.down.Store(false)
			n, err := spool.Replay(ctx)
			if err != nil || n != tc.wantWritten || spool.Len() != 0 {
				t.Errorf("replay: wrote %d, err %v, kept %d; want %d, nil, 0", n, err, spool.Len(), tc.wantWritten)
			}
			st, err := mem.Budget(ctx, line)
			if err != nil {
				t.Fatal(err)
			}
			if st.Spent != tc.wantSpent || st.Reserved != tc.wantHeld {
				t.Errorf("spent %d, reserved %d; want %d, %d", st.Spent, st.Reserved, tc.wantSpent, tc.wantHeld)
			}
			for _, reason := range []string{"spool_full", "unknown_reservation", "rejected"} {
				if got := metricValue(t, metrics.dropped.WithLabelValues(reason)); got != tc.wantDropped[reason] {
					t.Errorf("dropped{reason=%q} = %v, want %v", reason, got, tc.wantDropped[reason])
				}
			}
		})
	}
}

// TestSpoolerRun replays in the background once the store is back.
func TestSpoolerRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mem := NewMemory(Options{Clock: newFakeClock(t0)})
	flaky := &flakyBudgets{Budgets: mem}
	flaky.down.Store(true)
	spool := NewSpooler(flaky, 10, nil)
	line := BudgetLine{Scope: acme, Period: Daily, Limit: 1_000}
	if err := mem.Reserve(ctx, rid("a"), []BudgetLine{line}, 500, time.Hour); err != nil {
		t.Fatal(err)
	}
	if out, err := spool.Commit(ctx, rid("a"), 400); out != OutcomeSpooled || err != nil {
		t.Fatalf("commit while down: %s, %v", out, err)
	}
	done := make(chan struct{})
	go func() { spool.Run(ctx, time.Millisecond); close(done) }()
	flaky.down.Store(false)
	for deadline := time.Now().Add(10 * time.Second); spool.Len() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Run never replayed the spooled commit")
		}
	}
	cancel()
	<-done
	st, err := mem.Budget(context.Background(), line)
	if err != nil {
		t.Fatal(err)
	}
	if st.Spent != 400 || st.Reserved != 0 {
		t.Errorf("spent %d, reserved %d; want 400, 0", st.Spent, st.Reserved)
	}
}

// TestDiskSpoolerOutlivesTheProcess: commits kept during an outage by a
// process that then dies are replayed by the next process from the disk
// spool, each counted once, the one that had reached the store before
// the connection broke included; once written they are not replayed again.
func TestDiskSpoolerOutlivesTheProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	daily := BudgetLine{Scope: acme, Period: Daily, Limit: 1_000_000}
	mem := NewMemory(Options{Clock: newFakeClock(t0)})
	flaky := &flakyBudgets{Budgets: mem}
	for i := range 4 {
		if err := mem.Reserve(ctx, rid(fmt.Sprint("r", i)), []BudgetLine{daily}, 100, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	// r0's commit reached the store; the answer was lost, so it is kept too.
	if _, err := mem.Commit(ctx, rid("r0"), 50); err != nil {
		t.Fatal(err)
	}

	disk, left, err := spool.Open(dir, "budget", spool.Options{})
	if err != nil || len(left) != 0 {
		t.Fatalf("Open: %d records, %v", len(left), err)
	}
	first := NewDiskSpooler(flaky, 10, nil, disk, left, log)
	flaky.down.Store(true)
	for i := range 4 {
		if out, err := first.Commit(ctx, rid(fmt.Sprint("r", i)), 50); err != nil || out != OutcomeSpooled {
			t.Fatalf("commit r%d: %s, %v", i, out, err)
		}
	}
	if out, err := first.Record(ctx, rid("unreserved"), []BudgetLine{daily}, 70); err != nil || out != OutcomeSpooled {
		t.Fatalf("Record: %s, %v", out, err)
	}
	// The process dies with the store still down.
	if err := disk.Close(); err != nil {
		t.Fatal(err)
	}

	flaky.down.Store(false)
	disk, left, err = spool.Open(dir, "budget", spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	if len(left) != 5 {
		t.Fatalf("the disk spool handed back %d commits, want 5", len(left))
	}
	m := NewMetrics(nil)
	second := NewDiskSpooler(flaky, 10, m, disk, left, log)
	if n, err := second.Replay(ctx); err != nil || n != 5 {
		t.Fatalf("Replay: %d written, %v; want 5", n, err)
	}
	st, err := mem.Budget(ctx, daily)
	if err != nil {
		t.Fatal(err)
	}
	if st.Spent != 4*50+70 || st.Reserved != 0 {
		t.Errorf("spent %d reserved %d, want %d and 0", st.Spent, st.Reserved, 4*50+70)
	}
	if disk.Pending() != 0 {
		t.Errorf("%d commits still pending on disk after the replay", disk.Pending())
	}
	if err := disk.Close(); err != nil {
		t.Fatal(err)
	}
	again, left, err := spool.Open(dir, "budget", spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if len(left) != 0 {
		t.Errorf("the next start replays %d commits again", len(left))
	}
}
