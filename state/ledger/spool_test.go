package ledger

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/state/spool"
)

func openSpool(t *testing.T, dir string) (*spool.Spool, [][]byte) {
	t.Helper()
	sp, left, err := spool.Open(dir, "ledger", spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sp.Close() })
	return sp, left
}

// TestWriterSpoolOutlivesTheProcess: a writer with a spool loses nothing
// when its process dies with records unwritten (the database was down):
// the next process's writer writes them, each once, and after that nothing
// is replayed again.
func TestWriterSpoolOutlivesTheProcess(t *testing.T) {
	dir := t.TempDir()
	f := newFakeLedger()
	rs := genRecords(50, 21)

	sp, left := openSpool(t, dir)
	if len(left) != 0 {
		t.Fatalf("a new spool handed back %d records", len(left))
	}
	w, m, _ := newTestWriter(t, f, WriterOptions{BatchSize: 10, Spool: sp})
	for _, r := range rs[:20] {
		w.Write(r)
	}
	flush(t, w)
	f.setDown(true)
	for _, r := range rs[20:] {
		w.Write(r)
	}
	eventually(t, "a failed attempt", func() bool { return f.failures() >= 1 })
	// The process dies: its memory is gone, what it appended to the spool
	// stays. (Close with a done context gives up at once and forgets the
	// queue; then the spool is let go as the kernel does for a dead process.)
	dead, cancel := context.WithCancel(t.Context())
	cancel()
	_ = w.Close(dead)
	if got := metricValue(t, m.dropped.WithLabelValues(DropClosed)); got != 0 {
		t.Errorf("records left in the spool counted as dropped: %v", got)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}

	f.setDown(false)
	sp2, left := openSpool(t, dir)
	if len(left) != 30 {
		t.Fatalf("the spool handed back %d records, want the 30 unwritten", len(left))
	}
	w2, _, _ := newTestWriter(t, f, WriterOptions{BatchSize: 10, Spool: sp2, Spooled: left})
	flush(t, w2)
	if d := cmp.Diff(idsOf(rs), f.ids()); d != "" {
		t.Errorf("records in the ledger (-want +got):\n%s", d)
	}
	for _, r := range rs {
		if d := cmp.Diff(r.normalized(), f.row(r.RequestID).normalized()); d != "" {
			t.Errorf("record %s after the spool (-want +got):\n%s", r.RequestID, d)
			break
		}
	}
	if got := sp2.Pending(); got != 0 {
		t.Errorf("%d records still pending in the spool after they were written", got)
	}
	if err := w2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := sp2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, again := openSpool(t, dir); len(again) != 0 {
		t.Errorf("the next start replays %d records again", len(again))
	}
}

// TestWriterHeldRecords: a record held at an answer's completion and not
// yet written as final when the process dies is written by the next
// process; where the final one was spooled, the final one is what the
// ledger keeps.
func TestWriterHeldRecords(t *testing.T) {
	dir := t.TempDir()
	f := newFakeLedger()
	f.setDown(true) // nothing reaches the ledger before the crash
	rs := genRecords(3, 22)
	open := func() (*spool.Spool, [][]byte, *spool.Spool, [][]byte) {
		sp, left, err := spool.Open(dir, "ledger", spool.Options{})
		if err != nil {
			t.Fatal(err)
		}
		hs, held, err := spool.Open(dir, "ledger-held", spool.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return sp, left, hs, held
	}
	sp, _, hs, _ := open()
	w, _, _ := newTestWriter(t, f, WriterOptions{Spool: sp, HoldSpool: hs})
	if !w.Holding() {
		t.Fatal("a writer with a hold spool says it holds nothing")
	}
	for _, r := range rs {
		w.Hold(r)
	}
	final := rs[1]
	final.CostMicros += 1_000 // Done knows more than Complete did
	w.Write(final)
	dead, cancel := context.WithCancel(t.Context())
	cancel()
	_ = w.Close(dead)
	_ = sp.Close()
	_ = hs.Close()

	f.setDown(false)
	sp, left, hs, held := open()
	defer sp.Close()
	defer hs.Close()
	if len(left) != 1 || len(held) != 3 {
		t.Fatalf("after the crash: %d spooled, %d held; want 1 and 3", len(left), len(held))
	}
	w2, _, _ := newTestWriter(t, f, WriterOptions{Spool: sp, Spooled: left, HoldSpool: hs, Held: held})
	flush(t, w2)
	if d := cmp.Diff(idsOf(rs), f.ids()); d != "" {
		t.Errorf("records in the ledger (-want +got):\n%s", d)
	}
	if got := f.row(final.RequestID).CostMicros; got != final.CostMicros {
		t.Errorf("request %s recorded at cost %d, want the final record's %d", final.RequestID, got, final.CostMicros)
	}
	if hs.Pending() != 0 || sp.Pending() != 0 {
		t.Errorf("pending after the restart's writes: %d held, %d spooled", hs.Pending(), sp.Pending())
	}
}

// TestWriterLetsHoldsGo: a held record is let go once its final record is
// spooled, oldest first, so the hold spool holds only answers in flight.
func TestWriterLetsHoldsGo(t *testing.T) {
	dir := t.TempDir()
	sp, _ := openSpool(t, dir)
	hs, _, err := spool.Open(dir, "ledger-held", spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	w, _, _ := newTestWriter(t, newFakeLedger(), WriterOptions{Spool: sp, HoldSpool: hs})
	rs := genRecords(3, 23)
	for _, r := range rs {
		w.Hold(r)
	}
	for _, step := range []struct {
		write int
		want  int
	}{{1, 3}, {0, 1}, {2, 0}} {
		w.Write(rs[step.write])
		if got := hs.Pending(); got != step.want {
			t.Errorf("after writing record %d: %d held, want %d", step.write, got, step.want)
		}
	}
	w.Hold(genRecords(1, 24)[0])
	w.Release(genRecords(1, 24)[0].RequestID)
	if got := hs.Pending(); got != 0 {
		t.Errorf("after Release: %d held, want 0", got)
	}
}

// TestWriterFlushAnsweredWaitsForHolds: the record of an answer the client
// has, held until its request ends, is in the ledger once FlushAnswered
// returns; until the request ends FlushAnswered does not return.
func TestWriterFlushAnsweredWaitsForHolds(t *testing.T) {
	dir := t.TempDir()
	sp, _ := openSpool(t, dir)
	hs, _, err := spool.Open(dir, "ledger-held", spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	f := newFakeLedger()
	w, _, _ := newTestWriter(t, f, WriterOptions{Spool: sp, HoldSpool: hs})
	rs := genRecords(2, 25)
	for _, r := range rs {
		w.Hold(r)
	}
	if err := w.Flush(t.Context()); err != nil {
		t.Fatalf("Flush with nothing queued: %v", err)
	}
	dead, cancel := context.WithCancel(t.Context())
	cancel()
	if err := w.FlushAnswered(dead); err == nil {
		t.Fatal("FlushAnswered returned while two answered requests had not ended")
	}
	done := make(chan error, 1)
	go func() { done <- w.FlushAnswered(t.Context()) }()
	w.Write(rs[0])
	w.Release(rs[1].RequestID)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := f.ids(); !slices.Equal(got, []string{rs[0].RequestID}) {
		t.Errorf("ledger after FlushAnswered: %v, want [%s]", got, rs[0].RequestID)
	}
}

// TestHoldDoesNotWaitForTheQueue: Hold, in the reply that sends a
// request's answer, takes nothing the queue's users hold (another
// request's Write and its spool append, the batches): with the queue's
// lock held, a Hold and its release still go through (were they to wait
// for it, the test would hang until its timeout).
func TestHoldDoesNotWaitForTheQueue(t *testing.T) {
	dir := t.TempDir()
	sp, _, err := spool.Open(dir, "ledger", spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	hs, _, err := spool.Open(dir, "ledger-held", spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	w, _, _ := newTestWriter(t, newFakeLedger(), WriterOptions{Spool: sp, HoldSpool: hs})
	rs := genRecords(2, 23)
	w.mu.Lock()
	w.Hold(rs[0])
	w.Hold(rs[1])
	w.Release(rs[0].RequestID)
	w.mu.Unlock()
	if got := hs.Pending(); got != 1 {
		t.Errorf("hold spool has %d records pending, want 1 (one held, one released)", got)
	}
}
