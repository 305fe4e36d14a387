package translatortest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/readback"
	"github.com/switchyard/switchyard/translator/sse"
)

// Feed hands pieces to tr in order, the last with eos, and returns what tr
// wrote.
func Feed(tr translator.Translator, pieces ...[]byte) []byte {
	var out []byte
	for i, p := range pieces {
		out = append(out, tr.StreamChunk(p, i == len(pieces)-1)...)
	}
	return out
}

// Streams runs every case of testdata/stream (provider SSE in
// <case>.in.sse, client SSE in <case>.golden.sse) as a subtest. setup
// prepares a case once and returns fresh, which makes a new translator
// that has seen the case's request; every replay gets its own. The whole
// input must give the golden bytes, and every cut of it [Splits] tries
// must give the same bytes.
func Streams(t *testing.T, setup func(t *testing.T, c Case) (fresh func() translator.Translator)) {
	t.Helper()
	Run(t, "stream", "sse", func(t *testing.T, c Case) {
		fresh := setup(t, c)
		in := c.Input(t)
		got := Feed(fresh(), in)
		c.Check(t, got)
		Splits(t, in, got, fresh)
		Reports(t, in, fresh)
	})
}

// Reports checks a translator that says what its events sent
// ([translator.Reporter]) against reading its output back: after each
// piece it translates, whole and cut in two at every byte offset, it must
// report what readback.Chunk reads in that piece's output. Other
// translators pass.
func Reports(tb testing.TB, in []byte, fresh func() translator.Translator) {
	tb.Helper()
	if _, ok := fresh().(translator.Reporter); !ok {
		return
	}
	ReportsAt(tb, fresh, in)
	for i := range len(in) + 1 {
		ReportsAt(tb, fresh, in[:i], in[i:])
	}
}

// ReportsAt is [Reports] for one way of cutting the input into pieces.
func ReportsAt(tb testing.TB, fresh func() translator.Translator, pieces ...[]byte) {
	tb.Helper()
	tr := fresh()
	r, ok := tr.(translator.Reporter)
	if !ok {
		return
	}
	for i, p := range pieces {
		out := tr.StreamChunk(p, i == len(pieces)-1)
		text, errorType := r.Sent(nil)
		wantText, wantError := readback.Chunk(nil, out)
		if !bytes.Equal(text, wantText) || errorType != wantError {
			tb.Fatalf("piece %d of %d reported text %q and error %q; its output %q reads back as %q and %q",
				i+1, len(pieces), text, errorType, out, wantText, wantError)
		}
	}
}

// Splits replays in through fresh translators cut every way Envoy may cut
// a body, and fails tb unless each replay writes want: with eos in an empty
// chunk of its own; in two pieces at every byte offset; and in three
// pieces, the first cut every 11 bytes and the second 1, 2, 17 and 64
// bytes later (a delimiter or a short event cut twice) or a third of the
// way to the end. Envoy's chunk boundaries never line up with events, and
// the output must not depend on them.
func Splits(tb testing.TB, in, want []byte, fresh func() translator.Translator) {
	tb.Helper()
	if got := Feed(fresh(), in, nil); !bytes.Equal(got, want) {
		tb.Fatalf("eos in an empty chunk of its own: got\n%s\nwant\n%s", got, want)
	}
	n := len(in)
	for i := range n + 1 {
		if got := Feed(fresh(), in[:i], in[i:]); !bytes.Equal(got, want) {
			tb.Fatalf("cut at %d: got\n%s\nwant\n%s", i, got, want)
		}
	}
	for i := 0; i <= n; i += 11 {
		for _, j := range []int{i + 1, i + 2, i + 17, i + 64, i + (n-i)/3} {
			j = min(j, n)
			if got := Feed(fresh(), in[:i], in[i:j], in[j:]); !bytes.Equal(got, want) {
				tb.Fatalf("cut at %d and %d: got\n%s\nwant\n%s", i, j, got, want)
			}
		}
	}
}

// errorEvent is how the data of the gateway's error event begins (the
// OpenAI error envelope).
var errorEvent = []byte(`{"error":{`)

// CheckStream feeds in to a fresh translator whole and to another cut in
// two at cut (modulo len(in)+1), and fails tb unless both write the same
// bytes and those bytes are a finished client stream: SSE of data and
// comment lines only, every event whole, every event's data JSON or
// [DONE], the last event [DONE] or the gateway's error event and no
// event after either. It returns the data of the events.
func CheckStream(tb testing.TB, in []byte, cut uint, fresh func() translator.Translator) [][]byte {
	tb.Helper()
	whole := Feed(fresh(), in)
	k := int(cut % uint(len(in)+1))
	if split := Feed(fresh(), in[:k], in[k:]); !bytes.Equal(split, whole) {
		tb.Fatalf("a cut at %d changes the output:\nwhole %q\nsplit %q", k, whole, split)
	}
	for _, line := range bytes.Split(whole, []byte("\n")) {
		if len(line) > 0 && !bytes.HasPrefix(line, []byte("data: ")) && line[0] != ':' {
			tb.Fatalf("line %q is neither data nor a comment in %q", line, whole)
		}
	}
	var r sse.Reader
	r.Feed(whole)
	var events [][]byte
	for {
		ev, ok := r.Next()
		if !ok {
			break
		}
		events = append(events, ev.Data)
	}
	if _, ok := r.Flush(); ok || r.Buffered() != 0 {
		tb.Fatalf("the output ends inside an event: %q", whole)
	}
	if len(events) == 0 {
		tb.Fatalf("no events out of %q", in)
	}
	for i, data := range events {
		end := string(data) == "[DONE]" || bytes.HasPrefix(data, errorEvent)
		switch last := i == len(events)-1; {
		case string(data) != "[DONE]" && !json.Valid(data):
			tb.Fatalf("event %d is not JSON: %q", i, data)
		case end && !last:
			tb.Fatalf("event %d ends the stream but more follow: %q", i, whole)
		case !end && last:
			tb.Fatalf("the stream ends with neither [DONE] nor an error event: %q", whole)
		}
	}
	return events
}
