package responses

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/switchyard/switchyard/apischema/responsesapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
	"github.com/switchyard/switchyard/translator/translatortest"
)

// FuzzStreamChunk: whatever an OpenAI-style provider streams, and however
// Envoy cuts it, the Responses client gets the same bytes, and they are
// a finished Responses stream: named events whose data is JSON of the
// event's type, numbered 0, 1, 2… without a gap, ending with exactly one
// response.completed, response.incomplete or error event.
func FuzzStreamChunk(f *testing.F) {
	for _, seed := range translatortest.Seeds(f, "stream/openai_*.in.sse") {
		f.Add(seed, uint(len(seed)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint) {
		fresh := func() translator.Translator { return fresh(t, policy.KindOpenAI, []byte(defaultStreamRequest)) }
		whole := translatortest.Feed(fresh(), in)
		k := int(cut % uint(len(in)+1))
		if split := translatortest.Feed(fresh(), in[:k], in[k:]); !bytes.Equal(split, whole) {
			t.Fatalf("a cut at %d changes the output:\nwhole %q\nsplit %q", k, whole, split)
		}
		checkEvents(t, whole)
	})
}

// checkEvents fails t unless out is a finished Responses stream.
func checkEvents(t *testing.T, out []byte) {
	t.Helper()
	var r sse.Reader
	r.Feed(out)
	n := 0
	ended := false
	for {
		ev, ok := r.Next()
		if !ok {
			break
		}
		if ended {
			t.Fatalf("event %q follows the end of the stream in %q", ev.Data, out)
		}
		var body struct {
			Type           string `json:"type"`
			SequenceNumber *int   `json:"sequence_number"`
		}
		if err := json.Unmarshal(ev.Data, &body); err != nil {
			t.Fatalf("event %d is not JSON: %q", n, ev.Data)
		}
		if body.Type != ev.Name || body.SequenceNumber == nil || *body.SequenceNumber != n {
			t.Fatalf("event %d named %q has type %q and number %v", n, ev.Name, body.Type, body.SequenceNumber)
		}
		switch body.Type {
		case responsesapi.EventCompleted, responsesapi.EventIncomplete, responsesapi.EventError:
			ended = true
		}
		n++
	}
	if _, ok := r.Flush(); ok || r.Buffered() != 0 || !ended {
		t.Fatalf("the stream does not end with a finished event: %q", out)
	}
}
