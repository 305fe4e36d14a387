package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
)

func TestPassthroughRequest(t *testing.T) {
	tt := testTarget()
	tt.Header = translator.Headers{{Key: "anthropic-version", Value: "2099-01-01"}, {Key: "anthropic-beta", Value: "tools-2099"}}
	up, e := NewPassthrough(tt).Request(nil, []byte(`{"model":"claude-sonnet","max_tokens":9,"messages":[]}`))
	if e != nil {
		t.Fatal(e)
	}
	if up.Path != "/v1/messages" || string(up.Body) != `{"model":"claude-sonnet-4-5","max_tokens":9,"messages":[]}` {
		t.Errorf("path %s body %s", up.Path, up.Body)
	}
	h := translatortest.HeaderMap(up.Header)
	if h["anthropic-version"] != "2099-01-01" || h["anthropic-beta"] != "tools-2099" || h["x-api-key"] != "test-key-0001" {
		t.Errorf("headers %v; want the client's version and beta flags, and the gateway's key", h)
	}
	up, _ = NewCounter(testTarget()).Request(nil, []byte(`{"model":"claude-sonnet","messages":[]}`))
	if up.Path != "/v1/messages/count_tokens" || translatortest.HeaderMap(up.Header)["anthropic-version"] != apiVersion {
		t.Errorf("count: path %s headers %v", up.Path, up.Header)
	}
}

// TestPassthroughPricedFeatures: what would make an answer cost more than
// the reservation covers does not pass: max_tokens above the model's cap
// is held to it, and a long-context beta flag is removed while the rest
// of the client's flags, members and query go as they came.
func TestPassthroughPricedFeatures(t *testing.T) {
	tests := []struct {
		name, body, beta, path       string
		wantBody, wantBeta, wantPath string
	}{
		{name: "within the cap", body: `{"model":"claude-sonnet","max_tokens":100,"thinking":{"type":"adaptive"}}`,
			wantBody: `{"model":"claude-sonnet-4-5","max_tokens":100,"thinking":{"type":"adaptive"}}`, wantPath: "/v1/messages"},
		{name: "above the cap", body: `{"model":"claude-sonnet","max_tokens":100000,"output_config":{"effort":"high"}}`, beta: "output-128k-2025-02-19",
			wantBody: `{"model":"claude-sonnet-4-5","max_tokens":64000,"output_config":{"effort":"high"}}`, wantBeta: "output-128k-2025-02-19", wantPath: "/v1/messages"},
		{name: "a long-context flag among others", body: `{"model":"claude-sonnet","max_tokens":10}`, beta: "claude-code-20250219, context-1m-2025-08-07,effort-2025-11-24",
			wantBody: `{"model":"claude-sonnet-4-5","max_tokens":10}`, wantBeta: "claude-code-20250219,effort-2025-11-24", wantPath: "/v1/messages"},
		{name: "only a long-context flag", body: `{"model":"claude-sonnet","max_tokens":10}`, beta: "context-1m-2025-08-07",
			wantBody: `{"model":"claude-sonnet-4-5","max_tokens":10}`, wantPath: "/v1/messages"},
		{name: "the client's query", body: `{"model":"claude-sonnet","max_tokens":10}`, path: "/v1/messages?beta=true",
			wantBody: `{"model":"claude-sonnet-4-5","max_tokens":10}`, wantPath: "/v1/messages?beta=true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tt := testTarget()
			tt.Model.MaxOutputTokens = 64000
			if tc.beta != "" {
				tt.Header = append(tt.Header, translator.Header{Key: "anthropic-beta", Value: tc.beta})
			}
			if tc.path != "" {
				tt.Header = append(tt.Header, translator.Header{Key: ":path", Value: tc.path})
			}
			raw := []byte(strings.TrimSuffix(tc.body, "}") + `,"messages":[{"role":"user","content":"hi"}]}`)
			var asked struct {
				MaxTokens int `json:"max_tokens"`
			}
			if err := json.Unmarshal(raw, &asked); err != nil {
				t.Fatal(err)
			}
			up, err := NewPassthrough(tt).Request(&openaiapi.ChatRequest{MaxCompletionTokens: &asked.MaxTokens}, raw)
			if err != nil {
				t.Fatal(err)
			}
			wantBody := strings.TrimSuffix(tc.wantBody, "}") + `,"messages":[{"role":"user","content":"hi"}]}`
			h := translatortest.HeaderMap(up.Header)
			if string(up.Body) != wantBody || h["anthropic-beta"] != tc.wantBeta || up.Path != tc.wantPath {
				t.Errorf("got %s %s, beta %q;\nwant %s %s, beta %q", up.Path, up.Body, h["anthropic-beta"], tc.wantPath, wantBody, tc.wantBeta)
			}
		})
	}
}

// TestPassthroughStream: the provider's bytes reach the client as they
// are, however they are cut, with their usage read on the way; a stream
// cut before message_stop ends with an error event.
func TestPassthroughStream(t *testing.T) {
	whole := strings.Join([]string{
		`event: message_start`,
		`data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":30,"cache_creation_input_tokens":20,"cache_creation":{"ephemeral_5m_input_tokens":5,"ephemeral_1h_input_tokens":15}}}}`,
		``,
		`event: content_block_delta`,
		`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
		``,
		`event: message_delta`,
		`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
		``,
		`event: message_stop`,
		`data: {"type":"message_stop"}`,
		``, ``,
	}, "\n")
	fresh := func() translator.Translator { return NewPassthrough(testTarget()) }
	translatortest.Splits(t, []byte(whole), []byte(whole), fresh)
	tr := NewPassthrough(testTarget())
	translatortest.Feed(tr, []byte(whole))
	u, ok := tr.Usage()
	if d := u.PromptTokensDetails; !ok || u.PromptTokens != 62 || u.CompletionTokens != 7 || u.Cached() != 30 ||
		d.CacheWriteTokens != 20 || d.CacheWrite5mTokens != 5 || d.CacheWrite1hTokens != 15 {
		t.Errorf("usage %+v %+v (%v); want 62 prompt (30 cached, 20 written: 5 for 5 minutes, 15 for an hour), 7 completion", u, d, ok)
	}
	cut := whole[:strings.Index(whole, "event: message_delta")]
	out := translatortest.Feed(NewPassthrough(testTarget()), []byte(cut))
	if !strings.HasPrefix(string(out), cut) || !strings.Contains(string(out[len(cut):]), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"") {
		t.Errorf("cut stream gave %q", out)
	}
}

func TestPassthroughComplete(t *testing.T) {
	body := `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`
	tr := NewPassthrough(testTarget())
	r := tr.Complete(200, nil, []byte(body))
	if r.Status != 200 || string(r.Body) != body {
		t.Errorf("got %d %s; want the body as it came", r.Status, r.Body)
	}
	if u, ok := tr.Usage(); !ok || u.TotalTokens != 5 {
		t.Errorf("usage %+v", u)
	}
	// Web searches are billed per use: the answer's count is read.
	searched := NewPassthrough(testTarget())
	searched.Complete(200, nil, []byte(`{"id":"m","type":"message","role":"assistant","content":[],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2,"server_tool_use":{"web_search_requests":5}}}`))
	if u, _ := searched.Usage(); u.ServerToolUse.WebSearchRequests != 5 {
		t.Errorf("web searches %d, want the answer's 5", u.ServerToolUse.WebSearchRequests)
	}
	r = NewPassthrough(testTarget()).Complete(401, nil, []byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	if r.Status != 502 || !strings.Contains(string(r.Body), `"type":"error","error":{"type":"api_error","message":"provider anthropic refused the gateway's credentials"}`) {
		t.Errorf("a refused gateway key: %d %s", r.Status, r.Body)
	}
	r = NewCounter(testTarget()).Complete(200, nil, []byte(`{"input_tokens":14}`))
	if r.Status != 200 || string(r.Body) != `{"input_tokens":14}` {
		t.Errorf("count: %d %s", r.Status, r.Body)
	}
}
