package openai

import (
	"bytes"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
)

func TestResponsesPassthroughRequest(t *testing.T) {
	n := func(v int) *int { return &v }
	tests := []struct {
		name     string
		body     string
		asked    *int // the canonical request's cap
		want     string
		wantErr  string // the param of a refusal
		wantCode int
	}{
		{name: "model swapped, bytes kept, cap added", body: `{"model":"client-model", "input":"hi","store":false,"include":["reasoning.encrypted_content"],"x_future":{"a":1}}`,
			want: `{"model":"upstream-model", "input":"hi","store":false,"include":["reasoning.encrypted_content"],"x_future":{"a":1},"max_output_tokens":1024}`},
		{name: "the client's cap kept", body: `{"model":"m","max_output_tokens":500,"input":"hi"}`, asked: n(500),
			want: `{"model":"upstream-model","max_output_tokens":500,"input":"hi"}`},
		{name: "a cap above the model's lowered", body: `{"model":"m","max_output_tokens":99999,"input":"hi"}`, asked: n(99999),
			want: `{"model":"upstream-model","max_output_tokens":16384,"input":"hi"}`},
		{name: "codex tools pass", body: `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"g"}]},{"type":"web_search","external_web_access":false},{"type":"custom","name":"apply_patch"}]}`,
			want: `{"model":"upstream-model","input":"hi","tools":[{"type":"function","name":"f"},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"g"}]},{"type":"web_search","external_web_access":false},{"type":"custom","name":"apply_patch"}],"max_output_tokens":1024}`},
		{name: "file search refused", body: `{"model":"m","input":"hi","tools":[{"type":"function","name":"f"},{"type":"file_search","vector_store_ids":["vs_1"]}]}`, wantErr: "tools[1]"},
		{name: "code interpreter refused", body: `{"model":"m","input":"hi","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`, wantErr: "tools[0]"},
		{name: "image generation refused", body: `{"model":"m","input":"hi","tools":[{"type":"image_generation"}]}`, wantErr: "tools[0]"},
		{name: "computer use refused", body: `{"model":"m","input":"hi","tools":[{"type":"computer_use_preview"}]}`, wantErr: "tools[0]"},
		{name: "mcp refused", body: `{"model":"m","input":"hi","tools":[{"type":"mcp","server_url":"https://x"}]}`, wantErr: "tools[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewResponsesPassthrough(target(caseTarget{}))
			up, e := p.Request(&openaiapi.ChatRequest{MaxCompletionTokens: tt.asked}, []byte(tt.body))
			if tt.wantErr != "" {
				if e == nil || e.Status != 400 || e.Param != tt.wantErr || !strings.Contains(e.Message, "not served through this gateway") {
					t.Fatalf("got %v; want a 400 naming %s and why", e, tt.wantErr)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			if string(up.Body) != tt.want || up.Path != "/v1/responses" {
				t.Errorf("got %s %s\nwant /v1/responses %s", up.Path, up.Body, tt.want)
			}
			h := translatortest.HeaderMap(up.Header)
			if h["authorization"] != "Bearer "+testKey || h["accept-encoding"] != "identity" || h["content-type"] != "application/json" {
				t.Errorf("headers %v", h)
			}
		})
	}
}

const codexStream = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"q"}}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hi","logprobs":[]}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":3,"output_index":2,"item":{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","namespace":"multi_agent_v1","name":"spawn_agent","arguments":"{}"}}

event: response.completed
data: {"type":"response.completed","sequence_number":4,"response":{"id":"resp_1","object":"response","status":"completed","output":[{"type":"web_search_call"},{"type":"message"},{"type":"function_call"}],"usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":100,"cache_write_tokens":15},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":150}}}

`

// TestResponsesPassthroughStream: OpenAI's bytes reach the client as they
// are, however they are cut, read on the way for the usage and the web
// searches; a stream cut before its last event ends with an error event
// numbered next.
func TestResponsesPassthroughStream(t *testing.T) {
	fresh := func() translator.Translator { return NewResponsesPassthrough(target(caseTarget{})) }
	translatortest.Splits(t, []byte(codexStream), []byte(codexStream), fresh)
	p := NewResponsesPassthrough(target(caseTarget{}))
	translatortest.Feed(p, []byte(codexStream))
	u, ok := p.Usage()
	if !ok || u.PromptTokens != 120 || u.Cached() != 100 || u.PromptTokensDetails.CacheWriteTokens != 15 || u.CompletionTokens != 30 || u.CompletionTokensDetails.ReasoningTokens != 12 || u.TotalTokens != 150 ||
		u.ServerToolUse.WebSearchRequests != 1 {
		t.Errorf("usage %+v (%v); want 120 in (100 cached, 15 written to the cache), 30 out (12 reasoning), one web search", u, ok)
	}
	cut := codexStream[:strings.Index(codexStream, "event: response.completed")]
	out := translatortest.Feed(NewResponsesPassthrough(target(caseTarget{})), []byte(cut))
	if !strings.HasPrefix(string(out), cut) || !strings.Contains(string(out[len(cut):]), `event: error`+"\n"+`data: {"type":"error","sequence_number":4,"code":"upstream_invalid_response"`) {
		t.Errorf("cut stream gave %q", out[len(cut):])
	}
	p = NewResponsesPassthrough(target(caseTarget{}))
	translatortest.Feed(p, []byte(codexStream))
	if ev := p.ErrorEvent(translator.GarbageError("prov", "late")); ev != nil {
		t.Errorf("an error event after the stream's end: %s", ev)
	}
}

func TestResponsesPassthroughComplete(t *testing.T) {
	body := `{"id":"resp_1","object":"response","status":"completed","model":"gpt-4o-mini-2024-07-18","output":[{"type":"web_search_call","id":"ws_1"},{"type":"web_search_call","id":"ws_2"},{"type":"message","content":[{"type":"output_text","text":"Hi"}]}],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":12}}`
	p := NewResponsesPassthrough(target(caseTarget{}))
	r := p.Complete(200, nil, []byte(body))
	if r.Status != 200 || string(r.Body) != body {
		t.Errorf("got %d %s; want the body as it came", r.Status, r.Body)
	}
	if u, ok := p.Usage(); !ok || u.PromptTokens != 10 || u.CompletionTokens != 2 || u.ServerToolUse.WebSearchRequests != 2 {
		t.Errorf("usage %+v (%v)", u, ok)
	}
	for _, tt := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"a refused gateway key", 401, `{"error":{"message":"Incorrect API key provided: sk-abc***xyz","type":"invalid_request_error","code":"invalid_api_key"}}`,
			`{"error":{"message":"provider prov refused the gateway's credentials","type":"upstream_error","param":null,"code":"upstream_auth_error"}}`},
		{"a refused request", 400, `{"error":{"message":"Invalid value for 'reasoning.effort'.","type":"invalid_request_error","param":"reasoning.effort","code":"invalid_value"}}`,
			`{"error":{"message":"Invalid value for 'reasoning.effort'.","type":"invalid_request_error","param":"reasoning.effort","code":"invalid_value"}}`},
		{"garbage", 200, `<html>`, `{"error":{"message":"provider prov returned an invalid response: the body is not a JSON object","type":"upstream_error","param":null,"code":"upstream_invalid_response"}}`},
	} {
		r := NewResponsesPassthrough(target(caseTarget{})).Complete(tt.status, nil, []byte(tt.body))
		if string(r.Body) != tt.want || r.Status < 400 {
			t.Errorf("%s: got %d %s\nwant %s", tt.name, r.Status, r.Body, tt.want)
		}
	}
}

// FuzzResponsesPassthroughStream: any bytes, cut anywhere, reach the
// client as they came, followed at most by one error event of the
// gateway's, the same however they were cut.
func FuzzResponsesPassthroughStream(f *testing.F) {
	f.Add([]byte(codexStream), uint16(100))
	f.Add([]byte(codexStream[:len(codexStream)/2]), uint16(7))
	f.Add([]byte("data: {\"type\":\"error\",\"sequence_number\":-9}\n\n"), uint16(3))
	fresh := func() translator.Translator { return NewResponsesPassthrough(target(caseTarget{})) }
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		whole := translatortest.Feed(fresh(), in)
		k := int(cut) % (len(in) + 1)
		if split := translatortest.Feed(fresh(), in[:k], in[k:]); !bytes.Equal(split, whole) {
			t.Fatalf("cut at %d: got %q, want %q", k, split, whole)
		}
		added, ok := bytes.CutPrefix(whole, in)
		if !ok {
			t.Fatalf("the provider's bytes were changed: %q", whole)
		}
		if len(added) > 0 && !bytes.HasPrefix(added, []byte("event: error\ndata: {\"type\":\"error\"")) {
			t.Fatalf("added %q, want nothing or one error event", added)
		}
	})
}
