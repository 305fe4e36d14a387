package gemini

import (
	"encoding/json"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
)

// FuzzStreamChunk: any bytes, cut anywhere, give the same bytes as uncut,
// and those are a finished client stream.
func FuzzStreamChunk(f *testing.F) {
	for _, s := range translatortest.Seeds(f, "stream/*.in.sse") {
		f.Add(s, uint(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint) {
		translatortest.CheckStream(t, in, cut, func() translator.Translator { return New(testTarget()) })
	})
}

// FuzzComplete: any status and body give a JSON body, and a 2xx only for a
// real answer: a chat completion with one choice.
func FuzzComplete(f *testing.F) {
	for _, s := range translatortest.Seeds(f, "response/*.in.json") {
		f.Add(200, s)
	}
	for _, s := range translatortest.Seeds(f, "error/*.in.json") {
		var in errorInput
		if json.Unmarshal(s, &in) == nil {
			f.Add(in.Status, []byte(in.Body))
		}
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		r := New(testTarget()).Complete(status, nil, body)
		translatortest.CheckComplete(t, status, r, translatortest.ChatCompletion)
	})
}

// FuzzEmbeddingsComplete: any answer to a two-input request gives a JSON
// body, and a 2xx only with two embeddings.
func FuzzEmbeddingsComplete(f *testing.F) {
	f.Add(200, []byte(`{"embeddings":[{"values":[0.1]},{"values":[0.2]}]}`))
	f.Add(200, []byte(`{"embedding":{"values":[0.1]}}`))
	f.Add(429, []byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		req := &openaiapi.EmbeddingsRequest{Model: "e", Input: openaiapi.EmbeddingInput{Texts: []string{"a", "b"}}, EncodingFormat: "base64"}
		tr := New(testTarget())
		if _, e := tr.EmbeddingsRequest(req, nil); e != nil {
			t.Fatal(e)
		}
		r := tr.EmbeddingsComplete(status, nil, body)
		if !json.Valid(r.Body) {
			t.Fatalf("body is not JSON: %q", r.Body)
		}
		if r.Status >= 200 && r.Status <= 299 {
			var list openaiapi.EmbeddingList
			if err := json.Unmarshal(r.Body, &list); err != nil || len(list.Data) != 2 {
				t.Fatalf("got %d with %s, want two embeddings", r.Status, r.Body)
			}
		}
	})
}

// FuzzRequest: any chat request the parser accepts is translated into a
// JSON body, no larger than the request by more than the inlining bound, or
// refused with a 400; never a panic.
func FuzzRequest(f *testing.F) {
	for _, s := range translatortest.Seeds(f, "request/*.in.json") {
		f.Add(s)
	}
	f.Add([]byte(`{"model":"m",` + userHi + `,"tools":[{"type":"function","function":{"name":"f","parameters":` + doublingRefs(10) + `}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := openaiapi.ParseChatRequest(body)
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
		// Rewriting a message or a schema keyword at most triples it; what
		// inlining and any-value schemas add is paid for by the budget.
		if limit := 4*len(body) + maxSchemaBytes + 200*maxSchemaNodes; len(up.Body) > limit {
			t.Fatalf("a %d-byte request became a %d-byte upstream body, above %d", len(body), len(up.Body), limit)
		}
	})
}
