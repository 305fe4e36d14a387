package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
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

// FuzzStreamChunk: any bytes, cut anywhere, give the same output as uncut,
// and that output is a finished client stream, whose generated text and
// error the translator reports as reading it back finds them.
func FuzzStreamChunk(f *testing.F) {
	for i, b := range translatortest.Seeds(f, "stream/*.in.sse") {
		f.Add(b, uint16(len(b)/2), byte(i)|0xc0)
		f.Add(b, uint16(len(b)/3), byte(i))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16, conf byte) {
		fresh := func() translator.Translator { return fuzzTranslator(t, conf) }
		translatortest.CheckStream(t, in, uint(cut), fresh)
		k := int(cut) % (len(in) + 1)
		translatortest.ReportsAt(t, fresh, in[:k], in[k:])
	})
}

// FuzzComplete: any status and body give a JSON body; a 2xx only for a
// 2xx chat completion (an object with a choices array), an error envelope
// otherwise.
func FuzzComplete(f *testing.F) {
	for i, b := range translatortest.Seeds(f, "response/*.in.json") {
		var c caseIn
		if json.Unmarshal(b, &c) == nil && c.Endpoint == "" {
			body := []byte(c.Body)
			if c.BodyText != nil {
				body = []byte(*c.BodyText)
			}
			f.Add(c.Status, body, byte(i))
		}
	}
	for i, b := range translatortest.Seeds(f, "error/*.in.json") {
		var c caseIn
		if json.Unmarshal(b, &c) == nil {
			f.Add(c.Status, []byte(c.Body), byte(i))
		}
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, conf byte) {
		tr := fuzzTranslator(t, conf)
		r := tr.Complete(status, translator.Headers{{Key: "retry-after", Value: "1"}}, body)
		translatortest.CheckComplete(t, status, r, func(translator.Result) error {
			var cc struct {
				Choices []json.RawMessage `json:"choices"`
			}
			if json.Unmarshal(body, &cc) != nil || cc.Choices == nil {
				return errors.New("the provider body has no choices array")
			}
			return nil
		})
	})
}

// FuzzEmbeddingsComplete: any body gives a JSON body.
func FuzzEmbeddingsComplete(f *testing.F) {
	for _, b := range translatortest.Seeds(f, "response/embeddings_*.in.json") {
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
	for _, b := range translatortest.Seeds(f, "request/*.in.json") {
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
		req, e := openaiapi.ParseChatRequest(raw)
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
