package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	wire "github.com/switchyard/switchyard/filters/openai"
	"github.com/switchyard/switchyard/filters/translate/sse"
)

// seeds returns the contents of testdata files matching pattern.
func seeds(f *testing.F, pattern string) [][]byte {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	var out [][]byte
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

const jsonModeStreamRequest = `{"model":"claude-sonnet","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_object"}}`

// FuzzStreamChunk feeds any bytes, cut anywhere, and checks that the
// output is SSE whose events are chunks, one error, or a final [DONE]: a
// stream always ends with [DONE] or an error event, never silently.
func FuzzStreamChunk(f *testing.F) {
	for _, s := range seeds(f, "stream/*.in.sse") {
		f.Add(s, uint16(len(s)/2), false)
		f.Add(s, uint16(7), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16, jsonMode bool) {
		req := defaultStreamRequest
		if jsonMode {
			req = jsonModeStreamRequest
		}
		tr := newWith(t, []byte(req))
		at := min(int(cut), len(in))
		out := tr.StreamChunk(in[:at], false)
		out = append(out, tr.StreamChunk(in[at:], true)...)

		for _, line := range bytes.Split(out, []byte("\n")) {
			if len(line) > 0 && !bytes.HasPrefix(line, []byte("data: ")) && line[0] != ':' {
				t.Fatalf("line %q is neither data nor a comment in\n%s", line, out)
			}
		}
		var r sse.Reader
		r.Feed(out)
		var events [][]byte
		for {
			ev, ok := r.Next()
			if !ok {
				break
			}
			events = append(events, ev.Data)
		}
		if r.Buffered() != 0 {
			t.Fatalf("output ends inside an event:\n%s", out)
		}
		if len(events) == 0 {
			t.Fatalf("no events for %q", in)
		}
		for i, data := range events {
			last := i == len(events)-1
			if string(data) == "[DONE]" {
				if !last {
					t.Fatalf("[DONE] before the end:\n%s", out)
				}
				continue
			}
			var c struct {
				Object string          `json:"object"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(data, &c); err != nil {
				t.Fatalf("event %q is not JSON: %v", data, err)
			}
			switch {
			case c.Error != nil && !last:
				t.Fatalf("error event before the end:\n%s", out)
			case c.Error == nil && c.Object != "chat.completion.chunk":
				t.Fatalf("event %q is not a chunk", data)
			case c.Error == nil && last:
				t.Fatalf("stream ends with neither [DONE] nor an error:\n%s", out)
			}
		}
	})
}

// FuzzComplete checks that any provider answer becomes valid JSON, and a
// 2xx only for a provider success that is a message.
func FuzzComplete(f *testing.F) {
	for _, s := range seeds(f, "response/*.in.json") {
		f.Add(200, s, false)
	}
	for _, s := range seeds(f, "error/*.in.json") {
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
		if !json.Valid(r.Body) {
			t.Fatalf("body %q is not JSON", r.Body)
		}
		if r.Status < 200 || r.Status > 299 {
			var e struct {
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(r.Body, &e) != nil || e.Error == nil || e.Error.Message == "" {
				t.Fatalf("status %d with body %s, want an error envelope", r.Status, r.Body)
			}
			return
		}
		if status < 200 || status > 299 {
			t.Fatalf("got %d for provider status %d", r.Status, status)
		}
		var c wire.ChatCompletion
		if err := json.Unmarshal(r.Body, &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 {
			t.Fatalf("got %d with body %s, want a chat completion", r.Status, r.Body)
		}
		switch c.Choices[0].FinishReason {
		case wire.FinishStop, wire.FinishLength, wire.FinishToolCalls, wire.FinishContentFilter:
		default:
			t.Fatalf("finish_reason %q is not an OpenAI value", c.Choices[0].FinishReason)
		}
	})
}

// FuzzRequest checks that any parsable OpenAI request either translates
// into a JSON body or is refused with a 400.
func FuzzRequest(f *testing.F) {
	for _, s := range seeds(f, "request/*.in.json") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, perr := wire.ParseChatRequest(raw)
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
