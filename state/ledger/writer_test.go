package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeLedger keeps rows in a map with the ledger's insert semantics, and
// fails on demand.
type fakeLedger struct {
	Ledger // only Insert is used

	mu      sync.Mutex
	rows    map[string]Record
	batches []int // sizes of the batches that went through
	fails   int   // Insert calls that returned an error
	down    bool  // Insert reports ErrUnavailable
	// lostAck commits the next batch and then reports ErrUnavailable, as
	// a connection that breaks before the commit's answer arrives does.
	lostAck bool
	refuse  map[string]bool // request IDs the database refuses
}

func newFakeLedger() *fakeLedger {
	return &fakeLedger{rows: map[string]Record{}, refuse: map[string]bool{}}
}

func (f *fakeLedger) Insert(_ context.Context, rs []Record) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		f.fails++
		return 0, fmt.Errorf("%w: connection refused", ErrUnavailable)
	}
	for _, r := range rs {
		if f.refuse[r.RequestID] {
			f.fails++
			return 0, errors.New("value out of range")
		}
	}
	n := 0
	for _, r := range rs {
		if _, ok := f.rows[r.RequestID]; !ok {
			f.rows[r.RequestID] = r
			n++
		}
	}
	f.batches = append(f.batches, len(rs))
	if f.lostAck {
		f.lostAck = false
		f.fails++
		return 0, fmt.Errorf("%w: connection reset", ErrUnavailable)
	}
	return n, nil
}

func (f *fakeLedger) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeLedger) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.rows)
}

func (f *fakeLedger) batchSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

func (f *fakeLedger) row(id string) Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows[id]
}

func (f *fakeLedger) failures() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fails
}

func (f *fakeLedger) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for id := range f.rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func idsOf(rs []Record) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.RequestID)
	}
	slices.Sort(ids)
	return ids
}

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestWriter returns a writer that never flushes on its timer (unless o
// says otherwise) and retries quickly, with its metrics and log.
func newTestWriter(t *testing.T, l Ledger, o WriterOptions) (*Writer, *Metrics, *syncBuffer) {
	t.Helper()
	if o.FlushInterval == 0 {
		o.FlushInterval = time.Hour
	}
	o.MinBackoff, o.MaxBackoff = time.Millisecond, 5*time.Millisecond
	o.Metrics = NewMetrics(nil)
	logs := &syncBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	w := NewWriter(l, o)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = w.Close(ctx)
	})
	return w, o.Metrics, logs
}

func flush(t *testing.T, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestWriterWritesFullBatchesAtOnce(t *testing.T) {
	f := newFakeLedger()
	w, m, _ := newTestWriter(t, f, WriterOptions{BatchSize: 10})
	rs := genRecords(25, 10)
	for _, r := range rs {
		w.Write(r)
	}
	eventually(t, "two full batches written", func() bool { return f.len() == 20 })
	if got := w.Len(); got != 5 {
		t.Errorf("queued after the full batches: got %d, want 5", got)
	}
	flush(t, w)
	if d := cmp.Diff([]int{10, 10, 5}, f.batchSizes()); d != "" {
		t.Errorf("batch sizes (-want +got):\n%s", d)
	}
	if d := cmp.Diff(idsOf(rs), f.ids()); d != "" {
		t.Errorf("records written (-want +got):\n%s", d)
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"records written", metricValue(t, m.written), 25},
		{"batches", metricValue(t, m.batches), 3},
		{"buffered", metricValue(t, m.buffered), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestWriterWritesPartialBatchOnTimer(t *testing.T) {
	f := newFakeLedger()
	w, _, _ := newTestWriter(t, f, WriterOptions{BatchSize: 1000, FlushInterval: time.Millisecond})
	for _, r := range genRecords(3, 11) {
		w.Write(r)
	}
	eventually(t, "the timer to write a partial batch", func() bool { return f.len() == 3 })
}

func TestWriterStampsRecordsWithoutTime(t *testing.T) {
	f := newFakeLedger()
	w, _, _ := newTestWriter(t, f, WriterOptions{Now: func() time.Time { return t0 }})
	w.Write(Record{RequestID: "no-time"})
	flush(t, w)
	if got := f.row("no-time").Time; !got.Equal(t0) {
		t.Errorf("time: got %v, want %v", got, t0)
	}
}

// TestWriterKeepsRecordsThroughOutage writes while the database is down:
// nothing is lost or dropped, the writer retries, and once the database is
// back every record is written exactly once.
func TestWriterKeepsRecordsThroughOutage(t *testing.T) {
	f := newFakeLedger()
	w, m, logs := newTestWriter(t, f, WriterOptions{BatchSize: 10})
	rs := genRecords(50, 12)
	w.Write(rs[0])
	flush(t, w)
	f.setDown(true)
	for _, r := range rs[1:] {
		w.Write(r)
	}
	eventually(t, "three failed attempts", func() bool { return f.failures() >= 3 })
	if got := w.Len(); got != 49 {
		t.Errorf("queued during the outage: got %d, want 49", got)
	}
	if got := metricValue(t, m.buffered); got != 49 {
		t.Errorf("buffered gauge during the outage: got %v, want 49", got)
	}
	f.setDown(false)
	flush(t, w)
	if d := cmp.Diff(idsOf(rs), f.ids()); d != "" {
		t.Errorf("records written (-want +got):\n%s", d)
	}
	if got := metricValue(t, m.errors.WithLabelValues("unavailable")); got < 3 {
		t.Errorf("unavailable write errors: got %v, want at least 3", got)
	}
	for _, reason := range []string{DropBufferFull, DropRefused, DropInvalid, DropClosed} {
		if got := metricValue(t, m.dropped.WithLabelValues(reason)); got != 0 {
			t.Errorf("dropped (%s): got %v, want 0", reason, got)
		}
	}
	for _, want := range []string{"ledger unavailable: keeping usage records to retry", "ledger writes resumed"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

// TestWriterRetriesBatchWhoseAckWasLost: the database commits a batch but
// the writer hears an error. It writes the batch again; the ledger keeps
// one row per request and the metrics count the repeats as duplicates.
func TestWriterRetriesBatchWhoseAckWasLost(t *testing.T) {
	f := newFakeLedger()
	f.lostAck = true
	w, m, _ := newTestWriter(t, f, WriterOptions{BatchSize: 10})
	rs := genRecords(10, 13)
	for _, r := range rs {
		w.Write(r)
	}
	flush(t, w)
	if d := cmp.Diff([]int{10, 10}, f.batchSizes()); d != "" {
		t.Errorf("batch sizes (-want +got):\n%s", d)
	}
	if got := f.len(); got != 10 {
		t.Errorf("rows: got %d, want 10", got)
	}
	if got := metricValue(t, m.duplicates); got != 10 {
		t.Errorf("duplicates: got %v, want 10", got)
	}
	if got := metricValue(t, m.written); got != 0 {
		t.Errorf("written: got %v, want 0 (the first commit went unheard)", got)
	}
}

// TestWriterCountsOverflow fills the buffer during an outage: records past
// the bound are dropped, each one counted, and the log says so once per
// episode rather than once per record.
func TestWriterCountsOverflow(t *testing.T) {
	f := newFakeLedger()
	f.setDown(true)
	w, m, logs := newTestWriter(t, f, WriterOptions{BatchSize: 5, Capacity: 20})
	rs := genRecords(31, 14)
	for _, r := range rs[:30] {
		w.Write(r)
	}
	if got := w.Len(); got != 20 {
		t.Errorf("queued: got %d, want the capacity, 20", got)
	}
	if got := metricValue(t, m.dropped.WithLabelValues(DropBufferFull)); got != 10 {
		t.Errorf("dropped (buffer_full): got %v, want 10", got)
	}
	if got := strings.Count(logs.String(), "ledger buffer full"); got != 1 {
		t.Errorf("buffer-full log lines: got %d, want 1:\n%s", got, logs)
	}
	f.setDown(false)
	flush(t, w)
	w.Write(rs[30])
	flush(t, w)
	if d := cmp.Diff(idsOf(append(slices.Clone(rs[:20]), rs[30])), f.ids()); d != "" {
		t.Errorf("records written (-want +got):\n%s", d)
	}
	if !strings.Contains(logs.String(), "ledger buffer has room again") || !strings.Contains(logs.String(), "dropped=10") {
		t.Errorf("log lacks the end of the overflow with its count:\n%s", logs)
	}
}

// TestWriterDropsOnlyRefusedRecords: the database refuses one record of a
// batch; the others are written one by one and only that one is dropped.
func TestWriterDropsOnlyRefusedRecords(t *testing.T) {
	f := newFakeLedger()
	rs := genRecords(10, 15)
	f.refuse[rs[4].RequestID] = true
	w, m, logs := newTestWriter(t, f, WriterOptions{BatchSize: 10})
	for _, r := range rs {
		w.Write(r)
	}
	flush(t, w)
	want := idsOf(slices.Delete(slices.Clone(rs), 4, 5))
	if d := cmp.Diff(want, f.ids()); d != "" {
		t.Errorf("records written (-want +got):\n%s", d)
	}
	if got := metricValue(t, m.dropped.WithLabelValues(DropRefused)); got != 1 {
		t.Errorf("dropped (refused): got %v, want 1", got)
	}
	if got := metricValue(t, m.errors.WithLabelValues("refused")); got != 2 {
		t.Errorf("refused write errors: got %v, want 2 (the batch, then the record)", got)
	}
	if !strings.Contains(logs.String(), "request_id="+rs[4].RequestID) {
		t.Errorf("log does not name the dropped record:\n%s", logs)
	}
}

func TestWriterDropsRecordWithoutID(t *testing.T) {
	f := newFakeLedger()
	w, m, logs := newTestWriter(t, f, WriterOptions{})
	w.Write(Record{Tenant: "acme"})
	if got := w.Len(); got != 0 {
		t.Errorf("queued: got %d, want 0", got)
	}
	if got := metricValue(t, m.dropped.WithLabelValues(DropInvalid)); got != 1 {
		t.Errorf("dropped (invalid): got %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "reason=invalid") {
		t.Errorf("log lacks the drop:\n%s", logs)
	}
}

func TestWriterCloseWritesQueue(t *testing.T) {
	f := newFakeLedger()
	w, m, _ := newTestWriter(t, f, WriterOptions{BatchSize: 100})
	rs := genRecords(8, 16)
	for _, r := range rs[:7] {
		w.Write(r)
	}
	if err := w.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.len(); got != 7 {
		t.Errorf("rows after Close: got %d, want 7", got)
	}
	w.Write(rs[7])
	if got := metricValue(t, m.dropped.WithLabelValues(DropClosed)); got != 1 {
		t.Errorf("dropped after Close (closed): got %v, want 1", got)
	}
	if err := w.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWriterCloseGivesUpWhenContextEnds(t *testing.T) {
	f := newFakeLedger()
	f.setDown(true)
	w, m, logs := newTestWriter(t, f, WriterOptions{})
	for _, r := range genRecords(5, 17) {
		w.Write(r)
	}
	waiting := make(chan error, 1)
	go func() { waiting <- w.Flush(t.Context()) }()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := w.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "5 records unwritten") || !errors.Is(err, context.Canceled) {
		t.Errorf("Close: got %v, want it to report 5 records unwritten", err)
	}
	if got := metricValue(t, m.dropped.WithLabelValues(DropClosed)); got != 5 {
		t.Errorf("dropped (closed): got %v, want 5", got)
	}
	if got := metricValue(t, m.buffered); got != 0 {
		t.Errorf("buffered after Close: got %v, want 0", got)
	}
	if !strings.Contains(logs.String(), "ledger closed with usage records unwritten") {
		t.Errorf("log lacks the loss:\n%s", logs)
	}
	if err := <-waiting; err == nil || !strings.Contains(err.Error(), "5 records unwritten") {
		t.Errorf("a Flush waiting through Close: got %v, want it to report the loss", err)
	}
}

func TestWriterConcurrentWriters(t *testing.T) {
	f := newFakeLedger()
	w, _, _ := newTestWriter(t, f, WriterOptions{BatchSize: 7, FlushInterval: time.Millisecond})
	rs := genRecords(800, 18)
	var wg sync.WaitGroup
	for part := range slices.Chunk(rs, 100) {
		wg.Go(func() {
			for _, r := range part {
				w.Write(r)
			}
		})
	}
	wg.Wait()
	flush(t, w)
	if d := cmp.Diff(idsOf(rs), f.ids()); d != "" {
		t.Errorf("records written (-want +got):\n%s", d)
	}
}
