package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	wire "github.com/switchyard/switchyard/filters/openai"
	"github.com/switchyard/switchyard/filters/translate/sse"
	"github.com/switchyard/switchyard/filters/translate/translator"
)

// fuzzTargets are the attempts a fuzz input's conf byte picks from.
var fuzzTargets = []caseTarget{
	{Kind: "openai"},
	{Kind: "azure_openai", APIVersion: "2024-10-21"},
	{Kind: "openai_compatible"},
	{Kind: "openai_compatible", Dialect: "mistral"},
	{Kind: "openai_compatible", Dialect: "groq"},
	{Kind: "openai_compatible", Dialect: "deepseek"},
	{Kind: "openai_compatible", Dialect: "ollama"},
}

// fuzzTranslator builds a translator from conf: the target, and whether
// the client streamed and asked for usage.
func fuzzTranslator(tb testing.TB, conf byte) *Translator {
	tb.Helper()
	ct := fuzzTargets[int(conf)%len(fuzzTargets)]
	req := `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_abcdefghijkl","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_abcdefghijkl","content":"1"}]`
	if conf&0x80 != 0 {
		req += `,"stream":true`
		if conf&0x40 != 0 {
			req += `,"stream_options":{"include_usage":true}`
		}
	}
	tr, _, e := start(tb, ct, "", []byte(req+"}"))
	if e != nil {
		tb.Fatal(e)
	}
	return tr
}

func seedFiles(f *testing.F, pattern string) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
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

// FuzzStreamChunk: any bytes, cut anywhere, give the same output as uncut;
// the output is SSE whose data lines are JSON or [DONE], and it ends with
// [DONE] or one error event and nothing after.
func FuzzStreamChunk(f *testing.F) {
	for i, b := range seedFiles(f, "stream/*.in.sse") {
		f.Add(b, uint16(len(b)/2), byte(i)|0xc0)
		f.Add(b, uint16(len(b)/3), byte(i))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16, conf byte) {
		whole := fuzzTranslator(t, conf).StreamChunk(in, true)
		k := int(cut) % (len(in) + 1)
		tr := fuzzTranslator(t, conf)
		split := append(tr.StreamChunk(in[:k], false), tr.StreamChunk(in[k:], true)...)
		if !bytes.Equal(whole, split) {
			t.Fatalf("cut at %d changes the output:\nwhole %q\nsplit %q", k, whole, split)
		}
		var r sse.Reader
		r.Feed(whole)
		ended := false
		for {
			ev, ok := r.Next()
			if !ok {
				break
			}
			if ended {
				t.Fatalf("event %q after the end in %q", ev.Data, whole)
			}
			switch {
			case string(ev.Data) == "[DONE]":
				ended = true
			case !json.Valid(ev.Data):
				t.Fatalf("data is not JSON: %q", ev.Data)
			case bytes.HasPrefix(ev.Data, []byte(`{"error":`)):
				ended = true
			}
		}
		if r.Buffered() != 0 {
			t.Fatalf("output ends mid-event: %q", whole)
		}
		if !ended {
			t.Fatalf("output does not end with [DONE] or an error: %q", whole)
		}
	})
}

// FuzzComplete: any status and body give a JSON body; a 2xx only for a
// 2xx chat completion (an object with a choices array).
func FuzzComplete(f *testing.F) {
	for i, b := range seedFiles(f, "response/*.in.json") {
		var c caseIn
		if json.Unmarshal(b, &c) == nil && c.Endpoint == "" {
			body := []byte(c.Body)
			if c.BodyText != nil {
				body = []byte(*c.BodyText)
			}
			f.Add(c.Status, body, byte(i))
		}
	}
	for i, b := range seedFiles(f, "error/*.in.json") {
		var c caseIn
		if json.Unmarshal(b, &c) == nil {
			f.Add(c.Status, []byte(c.Body), byte(i))
		}
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, conf byte) {
		tr := fuzzTranslator(t, conf)
		r := tr.Complete(status, translator.Headers{{Key: "retry-after", Value: "1"}}, body)
		if !json.Valid(r.Body) {
			t.Fatalf("body is not JSON: %q", r.Body)
		}
		if r.Status >= 200 && r.Status <= 299 {
			var cc struct {
				Choices []json.RawMessage `json:"choices"`
			}
			if status < 200 || status > 299 || json.Unmarshal(body, &cc) != nil || cc.Choices == nil {
				t.Fatalf("got %d for status %d body %q, want an error", r.Status, status, body)
			}
		} else if r.Status < 400 {
			t.Fatalf("got status %d, want 2xx or an error status", r.Status)
		}
	})
}

// FuzzEmbeddingsComplete: any body gives a JSON body.
func FuzzEmbeddingsComplete(f *testing.F) {
	for _, b := range seedFiles(f, "response/embeddings_*.in.json") {
		var c caseIn
		if json.Unmarshal(b, &c) == nil {
			f.Add([]byte(c.Body), true)
			f.Add([]byte(c.Body), false)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, base64 bool) {
		tr := New(target(caseTarget{Kind: "openai_compatible"}))
		tr.base64 = base64
		r := tr.EmbeddingsComplete(200, nil, body)
		if !json.Valid(r.Body) {
			t.Fatalf("body is not JSON: %q", r.Body)
		}
	})
}

// FuzzRequest: for OpenAI, every field of an accepted request reaches the
// provider unchanged except those the gateway owns.
func FuzzRequest(f *testing.F) {
	for _, b := range seedFiles(f, "request/*.in.json") {
		var c caseIn
		if json.Unmarshal(b, &c) == nil && c.Endpoint == "" {
			var buf bytes.Buffer
			if json.Compact(&buf, c.Request) == nil {
				f.Add(buf.Bytes())
			}
		}
	}
	owned := map[string]bool{"model": true, "max_tokens": true, "max_completion_tokens": true, "stream_options": true, "seed": true}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, e := wire.ParseChatRequest(raw)
		if e != nil {
			return
		}
		tr := New(target(caseTarget{Kind: "openai"}))
		up, e := tr.Request(req, raw)
		if e != nil {
			t.Fatalf("Request refused an accepted body: %v", e)
		}
		var in, out map[string]json.RawMessage
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(up.Body, &out); err != nil {
			t.Fatalf("provider body is not a JSON object: %v\n%s", err, up.Body)
		}
		if string(out["model"]) != `"upstream-model"` {
			t.Fatalf("got model %s, want the upstream name", out["model"])
		}
		for k, v := range in {
			if owned[strings.ToLower(k)] {
				continue
			}
			if !bytes.Equal(v, out[k]) {
				t.Fatalf("field %q: got %s, want %s", k, out[k], v)
			}
		}
		for k := range out {
			if _, ok := in[k]; !ok && !owned[k] {
				t.Fatalf("field %q appeared", k)
			}
		}
	})
}
