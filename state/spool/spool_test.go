package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func open(t *testing.T, dir string, o Options) (*Spool, []string) {
	t.Helper()
	s, recs, err := Open(dir, "test", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, strs(recs)
}

func strs(recs [][]byte) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, string(r))
	}
	return out
}

func appendAll(t *testing.T, s *Spool, recs ...string) {
	t.Helper()
	for _, r := range recs {
		if err := s.Append([]byte(r)); err != nil {
			t.Fatal(err)
		}
	}
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

func counter(t *testing.T, m *Metrics, c func(*Metrics) *prometheus.CounterVec) float64 {
	t.Helper()
	return testutil.ToFloat64(c(m).WithLabelValues("test"))
}

// TestReplayedUntilAcknowledged: what is appended and not acknowledged
// comes back at the next Open, in order, and only that; acknowledged
// records never come back.
func TestReplayedUntilAcknowledged(t *testing.T) {
	tests := []struct {
		name    string
		appends int
		acks    []int // Ack calls before the restart
		segment int64 // SegmentBytes; small values rotate often
	}{
		{"nothing acknowledged", 5, nil, 0},
		{"some acknowledged", 5, []int{2}, 0},
		{"all acknowledged", 5, []int{3, 2}, 0},
		{"across segments", 50, []int{7, 13}, 64},
		{"across segments, all acknowledged", 50, []int{49, 1}, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := Options{SegmentBytes: tt.segment}
			s, got := open(t, dir, o)
			if len(got) != 0 {
				t.Fatalf("a new spool returned %q", got)
			}
			recs := names("r", tt.appends)
			appendAll(t, s, recs...)
			acked := 0
			for _, n := range tt.acks {
				if err := s.Ack(n); err != nil {
					t.Fatal(err)
				}
				acked += n
			}
			if got := s.Pending(); got != tt.appends-acked {
				t.Errorf("Pending = %d, want %d", got, tt.appends-acked)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			m := NewMetrics(nil)
			o.Metrics = m
			s2, got := open(t, dir, o)
			if want := recs[acked:]; !slices.Equal(got, want) {
				t.Fatalf("after restart got %q, want %q", got, want)
			}
			if got := counter(t, m, func(m *Metrics) *prometheus.CounterVec { return m.replays }); got != float64(tt.appends-acked) {
				t.Errorf("switchyard_spool_replayed_total = %v, want %d", got, tt.appends-acked)
			}
			// Delivered now: the next start replays nothing (exactly once).
			if err := s2.Ack(len(got)); err != nil {
				t.Fatal(err)
			}
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			_, again := open(t, dir, Options{})
			if len(again) != 0 {
				t.Fatalf("replayed again after acknowledgement: %q", again)
			}
		})
	}
}

// TestDeliveredSegmentsAreDeleted: the files shrink as records are
// acknowledged, at the next sync; a spool all delivered holds no bytes.
func TestDeliveredSegmentsAreDeleted(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{SegmentBytes: 100, SyncEvery: time.Hour})
	appendAll(t, s, names("record", 100)...)
	full := s.Bytes()
	segs, _ := filepath.Glob(filepath.Join(dir, "test", "*.seg"))
	if len(segs) < 10 {
		t.Fatalf("%d segments for %d bytes of 100-byte segments", len(segs), full)
	}
	if err := s.Ack(50); err != nil {
		t.Fatal(err)
	}
	if s.Bytes() >= full*2/3 {
		t.Errorf("after half acknowledged: %d of %d bytes", s.Bytes(), full)
	}
	// The files go at the next sync, not under the lock appends take.
	if kept, _ := filepath.Glob(filepath.Join(dir, "test", "*.seg")); len(kept) != len(segs) {
		t.Errorf("acknowledging deleted %d segments before a sync", len(segs)-len(kept))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	half, _ := filepath.Glob(filepath.Join(dir, "test", "*.seg"))
	if len(half) >= len(segs)*2/3 {
		t.Errorf("after half acknowledged and a sync: %d of %d segments", len(half), len(segs))
	}
	if err := s.Ack(50); err != nil {
		t.Fatal(err)
	}
	// The segment appended to is emptied by the next sync.
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if s.Bytes() != 0 || s.Pending() != 0 {
		t.Errorf("all acknowledged and synced: %d bytes, %d pending", s.Bytes(), s.Pending())
	}
	appendAll(t, s, "after")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, got := open(t, dir, Options{}); !slices.Equal(got, []string{"after"}) {
		t.Errorf("got %q, want [after]", got)
	}
}

// TestTornLastRecord: a process killed inside a write leaves part of a
// record at the end of the last segment, or a record whose bytes do not
// match its checksum. The records before it are replayed, the torn one is
// cut off and counted once, and appending goes on after it.
func TestTornLastRecord(t *testing.T) {
	tests := []struct {
		name string
		tail func(whole []byte) []byte // what is left of the record "torn"
	}{
		{"half a header", func(b []byte) []byte { return b[:HeaderLen/2] }},
		{"header without payload", func(b []byte) []byte { return b[:HeaderLen] }},
		{"payload cut short", func(b []byte) []byte { return b[:len(b)-2] }},
		{"checksum mismatch", func(b []byte) []byte { c := slices.Clone(b); c[len(c)-1] ^= 0xff; return c }},
		{"length past the bound", func(b []byte) []byte { c := slices.Clone(b); c[3] = 0x7f; return c }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := open(t, dir, Options{})
			appendAll(t, s, "one", "two", "torn")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			segs, _ := filepath.Glob(filepath.Join(dir, "test", "*.seg"))
			last := segs[len(segs)-1]
			data, err := os.ReadFile(last)
			if err != nil {
				t.Fatal(err)
			}
			whole := data[len(data)-(HeaderLen+len("torn")):]
			data = append(data[:len(data)-len(whole)], tt.tail(whole)...)
			if err := os.WriteFile(last, data, 0o600); err != nil {
				t.Fatal(err)
			}

			m := NewMetrics(nil)
			s2, got := open(t, dir, Options{Metrics: m})
			if !slices.Equal(got, []string{"one", "two"}) {
				t.Fatalf("got %q, want [one two]", got)
			}
			if got := counter(t, m, func(m *Metrics) *prometheus.CounterVec { return m.torns }); got != 1 {
				t.Errorf("switchyard_spool_torn_total = %v, want 1", got)
			}
			appendAll(t, s2, "three")
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			m = NewMetrics(nil)
			if _, got := open(t, dir, Options{Metrics: m}); !slices.Equal(got, []string{"one", "two", "three"}) {
				t.Fatalf("second restart got %q, want [one two three]", got)
			}
			if got := counter(t, m, func(m *Metrics) *prometheus.CounterVec { return m.torns }); got != 0 {
				t.Errorf("the torn record was counted again: %v", got)
			}
		})
	}
}

// TestBoundReached: past MaxBytes a record is not written. Append says so
// (ErrFull) and it is counted in switchyard_spool_overflow_total; it still
// counts as pending, so acknowledgements stay in step with the caller's
// queue. Once acknowledgements make room, records are written again. After
// a restart only the records that were written come back.
func TestBoundReached(t *testing.T) {
	dir := t.TempDir()
	m := NewMetrics(nil)
	rec := func(i int) string { return fmt.Sprintf("%-92d", i) } // 100 bytes with its header
	s, _ := open(t, dir, Options{MaxBytes: 500, Metrics: m})
	for i := range 5 {
		if err := s.Append([]byte(rec(i))); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	for i := 5; i < 8; i++ {
		if err := s.Append([]byte(rec(i))); !errors.Is(err, ErrFull) {
			t.Fatalf("record %d past the bound: %v, want ErrFull", i, err)
		}
	}
	if got := counter(t, m, func(m *Metrics) *prometheus.CounterVec { return m.overflows }); got != 3 {
		t.Errorf("switchyard_spool_overflow_total = %v, want 3", got)
	}
	if s.Pending() != 8 || s.Bytes() != 500 {
		t.Errorf("Pending %d, Bytes %d; want 8 and 500", s.Pending(), s.Bytes())
	}
	// Deliver all, the three kept off disk too: the next record has room,
	// the segment all delivered emptied for it.
	if err := s.Ack(8); err != nil {
		t.Fatal(err)
	}
	if s.Pending() != 0 {
		t.Errorf("all delivered: Pending %d", s.Pending())
	}
	if err := s.Append([]byte(rec(8))); err != nil {
		t.Fatalf("after room was made: %v", err)
	}
	if s.Bytes() != 100 {
		t.Errorf("one record after all were delivered: Bytes %d, want 100", s.Bytes())
	}
	if err := s.Append([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, got := open(t, dir, Options{}); !slices.Equal(got, []string{rec(8), "x"}) {
		t.Errorf("got %q", got)
	}
}

// TestOverflowKeepsAcknowledgementsInStep: records the bound kept off disk
// sit among written ones; acknowledging by count still lands on the right
// written records.
func TestOverflowKeepsAcknowledgementsInStep(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{MaxBytes: 3 * (HeaderLen + 1), SegmentBytes: 2 * (HeaderLen + 1)})
	appendAll(t, s, "a", "b", "c")
	if err := s.Append([]byte("d")); !errors.Is(err, ErrFull) {
		t.Fatalf("d: %v, want ErrFull", err)
	}
	if err := s.Ack(1); err != nil { // a
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, got := open(t, dir, Options{}); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("got %q, want [b c] (d was never written)", got)
	}
}

// TestOneProcessAtATime: a second Open of a spool in use fails, so two
// replicas never replay each other's records.
func TestOneProcessAtATime(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{})
	if _, _, err := Open(dir, "test", Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, dir, Options{}) // free again
}

// TestTornMark: an acknowledgement mark that fails its checksum replays
// from the oldest segment: more than needed, never less.
func TestTornMark(t *testing.T) {
	dir := t.TempDir()
	s, _ := open(t, dir, Options{})
	appendAll(t, s, "a", "b", "c")
	if err := s.Ack(1); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "test", "ack"), []byte("garbage-garbage-garb"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, got := open(t, dir, Options{}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("got %q, want [a b c]", got)
	}
}

// TestDiedBeforeTheMark: acknowledgements reach the disk at the next sync,
// so a process that dies before it replays what it had acknowledged since
// the last one (at least once), and nothing it had acknowledged before.
func TestDiedBeforeTheMark(t *testing.T) {
	die := func(s *Spool) { // kill -9: no sync; the Close after does nothing
		s.closing.Do(func() {
			close(s.stop)
			<-s.done
			s.closeFiles()
		})
	}
	for _, tt := range []struct {
		name   string
		synced bool
		want   []string
	}{
		{"acknowledged, not synced", false, names("r", 5)},
		{"acknowledged and synced", true, names("r", 5)[3:]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			o := Options{SyncEvery: time.Hour}
			s, _ := open(t, dir, o)
			appendAll(t, s, names("r", 5)...)
			if err := s.Ack(3); err != nil {
				t.Fatal(err)
			}
			if tt.synced {
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			die(s)
			_, got := open(t, dir, o)
			if !slices.Equal(got, tt.want) {
				t.Errorf("after the crash got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAppendDoesNotWaitForTheDisk: appends, rotations among them, go
// through while a sync's fsync is held up (were they to wait for it, the
// test would hang until its timeout); the next sync makes them durable and
// closes the rotated segments, and a reopen returns them all.
func TestAppendDoesNotWaitForTheDisk(t *testing.T) {
	dir := t.TempDir()
	o := Options{SyncEvery: time.Hour, SegmentBytes: 2 * (HeaderLen + 5)}
	s, _ := open(t, dir, o)
	appendAll(t, s, "a-000")
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.fsync = func(f *os.File) error {
		once.Do(func() { close(held); <-release })
		return f.Sync()
	}
	synced := make(chan error)
	go func() { synced <- s.Sync() }()
	<-held
	appendAll(t, s, names("b", 5)...)
	close(release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := len(s.rotated); n != 0 {
		t.Errorf("%d rotated segments left unsynced after a sync", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := open(t, dir, o)
	if want := append([]string{"a-000"}, names("b", 5)...); !slices.Equal(got, want) {
		t.Errorf("reopened: got %q, want %q", got, want)
	}
}

// TestAppendFrame: a record built after Frame's room and appended with
// AppendFrame is kept and replayed as Append keeps it, in order with
// Append's; one past MaxRecord is refused alike, and still pending.
func TestAppendFrame(t *testing.T) {
	dir := t.TempDir()
	o := Options{MaxRecord: 16}
	s, _ := open(t, dir, o)
	appendAll(t, s, "appended")
	if err := s.AppendFrame(append(Frame(make([]byte, 0, 32)), "framed"...)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendFrame(append(Frame(nil), "a record too long to keep"...)); !errors.Is(err, ErrFull) {
		t.Errorf("a framed record past MaxRecord: %v, want ErrFull", err)
	}
	if got := s.Pending(); got != 3 {
		t.Errorf("%d pending, want 3 (the refused one counts)", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, got := open(t, dir, o); !slices.Equal(got, []string{"appended", "framed"}) {
		t.Errorf("reopened: got %q, want [appended framed]", got)
	}
}
