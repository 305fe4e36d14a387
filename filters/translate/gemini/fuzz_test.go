package gemini

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	wire "github.com/switchyard/switchyard/filters/openai"
	"github.com/switchyard/switchyard/filters/translate/sse"
)

// seeds returns the inputs of a testdata directory.
func seeds(f *testing.F, dir, pattern string) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, pattern))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds in testdata/%s: %v", dir, err)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzStreamChunk: any bytes, cut anywhere, give valid SSE whose data is
// JSON or [DONE], end in exactly one of [DONE] or an error event, and are
// the same bytes however they were cut.
func FuzzStreamChunk(f *testing.F) {
	for _, s := range seeds(f, "stream", "*.in.sse") {
		f.Add(s, uint(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint) {
		cut %= uint(len(in) + 1)
		whole := New(testTarget()).StreamChunk(in, true)
		tr := New(testTarget())
		got := append(tr.StreamChunk(in[:cut], false), tr.StreamChunk(in[cut:], true)...)
		if !bytes.Equal(got, whole) {
			t.Fatalf("cut at %d changed the output:\ngot  %q\nwant %q", cut, got, whole)
		}
		var r sse.Reader
		r.Feed(got)
		var events [][]byte
		for {
			ev, ok := r.Next()
			if !ok {
				break
			}
			events = append(events, ev.Data)
		}
		if r.Buffered() != 0 {
			t.Fatalf("output ends in an unfinished event: %q", got)
		}
		if len(events) == 0 {
			t.Fatalf("no events out of %q", in)
		}
		for i, data := range events {
			last := i == len(events)-1
			switch {
			case string(data) == "[DONE]":
				if !last {
					t.Fatalf("[DONE] before the end: %q", got)
				}
			case !json.Valid(data):
				t.Fatalf("event %d is not JSON: %q", i, data)
			case bytes.HasPrefix(data, []byte(`{"error"`)):
				if !last {
					t.Fatalf("events after an error event: %q", got)
				}
			case last:
				t.Fatalf("the stream ends with neither [DONE] nor an error event: %q", got)
			}
		}
	})
}

// FuzzComplete: any status and body give a JSON body, and a 2xx only for a
// real answer: a chat completion with one choice.
func FuzzComplete(f *testing.F) {
	for _, s := range seeds(f, "response", "*.in.json") {
		f.Add(200, s)
	}
	for _, s := range seeds(f, "error", "*.in.json") {
		var in errorInput
		if json.Unmarshal(s, &in) == nil {
			f.Add(in.Status, []byte(in.Body))
		}
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		r := New(testTarget()).Complete(status, nil, body)
		if !json.Valid(r.Body) {
			t.Fatalf("body is not JSON: %q", r.Body)
		}
		if r.Status < 200 || r.Status > 299 {
			var e struct {
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(r.Body, &e) != nil || e.Error == nil || e.Error.Message == "" {
				t.Fatalf("status %d without an error envelope: %s", r.Status, r.Body)
			}
			return
		}
		if status < 200 || status > 299 {
			t.Fatalf("got %d for a provider %d", r.Status, status)
		}
		var cc wire.ChatCompletion
		if err := json.Unmarshal(r.Body, &cc); err != nil || len(cc.Choices) != 1 || cc.Object != "chat.completion" {
			t.Fatalf("got %d with a body that is not a chat completion: %s", r.Status, r.Body)
		}
		switch cc.Choices[0].FinishReason {
		case wire.FinishStop, wire.FinishLength, wire.FinishToolCalls, wire.FinishContentFilter:
		default:
			t.Fatalf("finish_reason %q is not an OpenAI value", cc.Choices[0].FinishReason)
		}
	})
}

// FuzzEmbeddingsComplete: any answer to a two-input request gives a JSON
// body, and a 2xx only with two embeddings.
func FuzzEmbeddingsComplete(f *testing.F) {
	f.Add(200, []byte(`{"embeddings":[{"values":[0.1]},{"values":[0.2]}]}`))
	f.Add(200, []byte(`{"embedding":{"values":[0.1]}}`))
	f.Add(429, []byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		req := &wire.EmbeddingsRequest{Model: "e", Input: wire.EmbeddingInput{Texts: []string{"a", "b"}}, EncodingFormat: "base64"}
		tr := New(testTarget())
		if _, e := tr.EmbeddingsRequest(req, nil); e != nil {
			t.Fatal(e)
		}
		r := tr.EmbeddingsComplete(status, nil, body)
		if !json.Valid(r.Body) {
			t.Fatalf("body is not JSON: %q", r.Body)
		}
		if r.Status >= 200 && r.Status <= 299 {
			var list wire.EmbeddingList
			if err := json.Unmarshal(r.Body, &list); err != nil || len(list.Data) != 2 {
				t.Fatalf("got %d with %s, want two embeddings", r.Status, r.Body)
			}
		}
	})
}

// FuzzRequest: any chat request the parser accepts is translated into a
// JSON body or refused with a 400; never a panic.
func FuzzRequest(f *testing.F) {
	for _, s := range seeds(f, "request", "*.in.json") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := wire.ParseChatRequest(body)
		if e != nil {
			return
		}
		up, e := New(testTarget()).Request(req, body)
		if e != nil {
			if e.Status != 400 {
				t.Fatalf("refused with %d, want 400", e.Status)
			}
			return
		}
		if !json.Valid(up.Body) {
			t.Fatalf("upstream body is not JSON: %q", up.Body)
		}
	})
}
