package sse

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readAll reads the chunks as a translator does, and scribbles over each
// once read: the reader borrows a chunk only until Next returns false.
func readAll(chunks ...string) []Event { return read(false, chunks...) }

// read reads the chunks with a reader that borrows or not; a borrowed
// event is copied before the next read, as its contract asks, and its
// chunk overwritten once read, so that an event that outlived its bytes
// shows.
func read(borrow bool, chunks ...string) []Event {
	r := Reader{Borrow: borrow}
	var got []Event
	keep := func(ev Event) {
		ev.Data = append([]byte(nil), ev.Data...)
		got = append(got, ev)
	}
	for _, c := range chunks {
		b := []byte(c)
		r.Feed(b)
		for {
			ev, ok := r.Next()
			if !ok {
				break
			}
			keep(ev)
		}
		for i := range b {
			b[i] = 'X'
		}
	}
	if ev, ok := r.Flush(); ok {
		keep(ev)
	}
	return got
}

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"single data", "data: {\"a\":1}\n\n", []Event{{Data: []byte(`{"a":1}`)}}},
		{"named event", "event: message_start\ndata: {}\n\n", []Event{{Name: "message_start", Data: []byte("{}")}}},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []Event{{Data: []byte("x")}, {Data: []byte("y")}}},
		{"bare cr", "data: x\r\rdata: y\r\r", []Event{{Data: []byte("x")}, {Data: []byte("y")}}},
		{"comment skipped", ": keep-alive\n\ndata: z\n\n", []Event{{Data: []byte("z")}}},
		{"multi-line data", "data: a\ndata: b\n\n", []Event{{Data: []byte("a\nb")}}},
		{"no space after colon", "data:q\n\n", []Event{{Data: []byte("q")}}},
		{"unterminated last event", "data: tail", []Event{{Data: []byte("tail")}}},
		{"event without data dropped", "event: ping\n\ndata: d\n\n", []Event{{Data: []byte("d")}}},
		{"empty lines only", "\n\n\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, readAll(tt.in)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReaderEverySplit feeds every stream cut at every byte offset and
// expects the same events as the uncut stream.
func TestReaderEverySplit(t *testing.T) {
	t.Parallel()
	streams := []string{
		"event: a\r\ndata: {\"x\":1}\r\n\r\n: c\r\ndata: two\r\ndata: lines\r\n\r\n",
		"data: [DONE]\n\n",
		"data: a\r\rdata: b\r\r",
	}
	for _, s := range streams {
		want := readAll(s)
		for i := range len(s) + 1 {
			for j := i; j <= len(s); j++ {
				for _, borrow := range []bool{false, true} {
					got := read(borrow, s[:i], s[i:j], s[j:])
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("split at %d,%d of %q, borrowing %v (-want +got):\n%s", i, j, s, borrow, diff)
					}
				}
			}
		}
	}
}

// TestReaderHoldsNothingBetweenEvents: a stream waiting for its next
// chunk costs its reader no buffer unless an event is unfinished, and a
// usual event one allocation, its data.
func TestReaderHoldsNothingBetweenEvents(t *testing.T) {
	chunk := []byte("event: e\ndata: {\"a\":1}\n\ndata: {\"b\":2}\n\n")
	var r Reader
	allocs := testing.AllocsPerRun(100, func() {
		r.Feed(chunk)
		for {
			if _, ok := r.Next(); !ok {
				break
			}
		}
	})
	if allocs > 3 {
		t.Errorf("%.0f allocations for two events, want 3: their data and one name", allocs)
	}
	if r.buf != nil || r.line != nil || cap(r.data) != 0 || r.Buffered() != 0 {
		t.Errorf("between chunks the reader holds buf %q (cap %d), line %q, data cap %d", r.buf, cap(r.buf), r.line, cap(r.data))
	}
	r.Feed([]byte("data: {\"c\""))
	r.Next()
	if r.Buffered() == 0 {
		t.Fatal("an unfinished line was dropped")
	}
	r.Feed([]byte(":3}\n"))
	r.Next()
	if r.Buffered() != 0 || r.line != nil || string(r.data) != `{"c":3}` {
		t.Errorf("an event cut after its data line: buf %q, line %q, data %q", r.buf, r.line, r.data)
	}
}

// TestReaderNeverWritesIntoAChunk: two chunks fed before reading must not
// be joined in the first one's spare capacity, which is the caller's.
func TestReaderNeverWritesIntoAChunk(t *testing.T) {
	whole := []byte("data: 1\n\ndata: 2\n\nSPARE")
	first, spare := whole[:9], whole[9:]
	var r Reader
	r.Feed(first)
	r.Feed([]byte("data: 2\n\n"))
	var got []string
	for {
		ev, ok := r.Next()
		if !ok {
			break
		}
		got = append(got, string(ev.Data))
	}
	if diff := cmp.Diff([]string{"1", "2"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if string(spare) != "data: 2\n\nSPARE" {
		t.Errorf("the first chunk's spare capacity was written: %q", spare)
	}
}

func FuzzReader(f *testing.F) {
	f.Add("data: x\n\n", 3)
	f.Add("event: e\r\ndata: y\r\n\r\n", 5)
	f.Add(": c\rdata: z\r\r", 1)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		whole := readAll(s)
		if cut < 0 {
			cut = -cut
		}
		cut %= len(s) + 1
		split := readAll(s[:cut], s[cut:])
		if diff := cmp.Diff(whole, split); diff != "" {
			t.Fatalf("split at %d changed events:\n%s", cut, diff)
		}
		for _, ev := range whole {
			if strings.ContainsAny(ev.Name, "\r\n") {
				t.Fatalf("event name %q holds a line break", ev.Name)
			}
		}
	})
}

// TestReaderBorrowAllocatesNothing: a borrowing reader hands out events
// without a copy.
func TestReaderBorrowAllocatesNothing(t *testing.T) {
	chunk := []byte("data: {\"a\":1}\n\ndata: {\"b\":2}\n\n")
	r := Reader{Borrow: true}
	allocs := testing.AllocsPerRun(100, func() {
		r.Feed(chunk)
		for {
			if _, ok := r.Next(); !ok {
				break
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%.0f allocations for two borrowed events, want 0", allocs)
	}
}
