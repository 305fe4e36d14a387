package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
)

const jsonModeStreamRequest = `{"model":"claude-sonnet","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_object"}}`

// FuzzStreamChunk feeds any bytes, cut anywhere, and checks that the
// output does not depend on the cut and is a finished client stream whose
// events are chunks, one error, or a final [DONE]: a stream always ends
// with [DONE] or an error event, never silently.
func FuzzStreamChunk(f *testing.F) {
	for _, s := range translatortest.Seeds(f, "stream/*.in.sse") {
		f.Add(s, uint16(len(s)/2), false)
		f.Add(s, uint16(7), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16, jsonMode bool) {
		req := []byte(defaultStreamRequest)
		if jsonMode {
			req = []byte(jsonModeStreamRequest)
		}
		events := translatortest.CheckStream(t, in, uint(cut), func() translator.Translator { return newWith(t, req) })
		// CheckStream has the last event alone end the stream.
		for _, data := range events[:len(events)-1] {
			var c struct {
				Object string `json:"object"`
			}
			if err := json.Unmarshal(data, &c); err != nil || c.Object != "chat.completion.chunk" {
				t.Fatalf("event %q is not a chunk", data)
			}
		}
	})
}

// FuzzComplete checks that any provider answer becomes valid JSON, and a
// 2xx only for a provider success that is a message.
func FuzzComplete(f *testing.F) {
	for _, s := range translatortest.Seeds(f, "response/*.in.json") {
		f.Add(200, s, false)
	}
	for _, s := range translatortest.Seeds(f, "error/*.in.json") {
		var in struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		}
		if err := json.Unmarshal(s, &in); err != nil {
			f.Fatal(err)
		}
		f.Add(in.Status, []byte(in.Body), true)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, jsonMode bool) {
		req := defaultRequest
		if jsonMode {
			req = `{"model":"claude-sonnet","messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_object"}}`
		}
		r := newWith(t, []byte(req)).Complete(status, nil, body)
		translatortest.CheckComplete(t, status, r, translatortest.ChatCompletion)
	})
}

// FuzzRequest checks that any parsable OpenAI request either translates
// into a JSON body or is refused with a 400.
func FuzzRequest(f *testing.F) {
	for _, s := range translatortest.Seeds(f, "request/*.in.json") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, perr := openaiapi.ParseChatRequest(raw)
		if perr != nil {
			return
		}
		up, e := New(testTarget()).Request(req, raw)
		if e != nil {
			if e.Status != 400 {
				t.Fatalf("refusal with status %d, want 400", e.Status)
			}
			return
		}
		var body request
		if err := json.Unmarshal(up.Body, &body); err != nil {
			t.Fatalf("body %s is not JSON: %v", up.Body, err)
		}
		if body.MaxTokens < 1 || len(body.Messages) == 0 || body.Messages[0].Role != "user" {
			t.Fatalf("body %s breaks an Anthropic rule (max_tokens at least 1, first turn user)", up.Body)
		}
		for i, m := range body.Messages {
			if i > 0 && m.Role == body.Messages[i-1].Role {
				t.Fatalf("body %s has two %s turns in a row", up.Body, m.Role)
			}
			for _, b := range append(m.Content, body.System...) {
				if b.Type == "text" && strings.TrimSpace(b.Text) == "" {
					t.Fatalf("body %s has a blank text block", up.Body)
				}
			}
		}
	})
}
