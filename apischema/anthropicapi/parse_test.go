package anthropicapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestParseMessagesRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		countOnly bool
		wantParam string // "" for a request that parses
		wantMsg   string
	}{
		{name: "minimal", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
		{name: "blocks, system array, tools", body: `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],
			"tools":[{"name":"t","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"t"},
			"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"ok"}]}]}`},
		{name: "count needs no max_tokens", countOnly: true, body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{name: "empty body", body: ``, wantMsg: "empty"},
		{name: "not an object", body: `[1]`, wantMsg: "JSON object"},
		{name: "bad json", body: `{"model":`, wantMsg: "not valid JSON"},
		{name: "no model", body: `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, wantParam: "model"},
		{name: "no max_tokens", body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, wantParam: "max_tokens"},
		{name: "max_tokens 0", body: `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, wantParam: "max_tokens"},
		{name: "no messages", body: `{"model":"m","max_tokens":5,"messages":[]}`, wantParam: "messages"},
		// What the gateway does not know is the provider's to judge (and a
		// translation's to refuse by name): Claude Code sends system turns,
		// adaptive thinking, output_config and context_management.
		{name: "a system turn and newer members", body: `{"model":"m","max_tokens":5,"thinking":{"type":"adaptive","display":"omitted"},
			"output_config":{"effort":"medium"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
			"metadata":{"user_id":"{\"device_id\":\"d\"}"},
			"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]},{"role":"system","content":[{"type":"text","text":"env"}]}]}`},
		{name: "a block type newer than the gateway", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"video","source":{"type":"file","file_id":"f"}}]}]}`},
		{name: "a role newer than the gateway", body: `{"model":"m","max_tokens":5,"messages":[{"role":"critic","content":"hi"}]}`},
		{name: "a system block newer than the gateway", body: `{"model":"m","max_tokens":5,"system":[{"type":"image"}],"messages":[{"role":"user","content":"hi"}]}`},
		{name: "a tool_choice newer than the gateway", body: `{"model":"m","max_tokens":5,"tool_choice":{"type":"sometimes"},"messages":[{"role":"user","content":"hi"}]}`},
		{name: "no role", body: `{"model":"m","max_tokens":5,"messages":[{"content":"hi"}]}`, wantParam: "messages", wantMsg: "role"},
		{name: "a block without a type", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, wantParam: "messages", wantMsg: "type"},
		{name: "a member twice in two cases", body: `{"model":"m","max_tokens":8000,"MAX_TOKENS":1,"messages":[{"role":"user","content":"hi"}]}`, wantParam: "MAX_TOKENS", wantMsg: "send each member once"},
		{name: "metadata nested too deep", body: `{"model":"m","max_tokens":5,"metadata":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `,"messages":[{"role":"user","content":"hi"}]}`, wantMsg: "nests deeper"},
		{name: "too many blocks", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[` + strings.Repeat(`{"type":"text","text":"x"},`, 50_000) + `{"type":"text","text":"x"}]}]}`, wantMsg: "array elements"},
		{name: "a long user id", body: `{"model":"m","max_tokens":5,"metadata":{"user_id":"` + strings.Repeat("u", 257) + `"},"messages":[{"role":"user","content":"hi"}]}`, wantParam: "metadata"},
		{name: "content a number", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":5}]}`, wantMsg: "content"},
		{name: "null content", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":null}]}`, wantMsg: "content must be"},
		{name: "tool_use from the user", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"x","name":"t"}]}]}`, wantParam: "messages"},
		{name: "tool_result without id", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, wantParam: "messages"},
		{name: "image without source", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image"}]}]}`, wantParam: "messages"},
		{name: "temperature above 1", body: `{"model":"m","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"hi"}]}`, wantParam: "temperature"},
		{name: "nameless tool", body: `{"model":"m","max_tokens":5,"tools":[{"input_schema":{}}],"messages":[{"role":"user","content":"hi"}]}`, wantParam: "tools"},
		{name: "wrong type", body: `{"model":"m","max_tokens":"5","messages":[{"role":"user","content":"hi"}]}`, wantParam: "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, e := ParseMessagesRequest([]byte(tt.body), tt.countOnly)
			if tt.wantParam == "" && tt.wantMsg == "" {
				if e != nil || r == nil {
					t.Fatalf("refused: %v", e)
				}
				return
			}
			if e == nil {
				t.Fatal("accepted, want a refusal")
			}
			if e.Status != http.StatusBadRequest || e.Param != tt.wantParam || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("got %d param %q %q; want 400 param %q containing %q", e.Status, e.Param, e.Message, tt.wantParam, tt.wantMsg)
			}
			var env struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if json.Unmarshal(ErrorBody(e, "req1"), &env) != nil || env.Type != "error" || env.Error.Type != "invalid_request_error" {
				t.Errorf("envelope %s", ErrorBody(e, "req1"))
			}
		})
	}
}

// FuzzParseMessagesRequest: any body either parses into a request whose
// checked fields hold, or is refused with a 400 that renders as
// Anthropic's envelope; nothing panics.
func FuzzParseMessagesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"system":"s","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"u"}}]},{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","is_error":true,"content":[{"type":"text","text":"no"}]}]}]}`,
		`{"model":"m","messages":[]}`, `[]`, `{`, `null`,
		`{"model":"m","max_tokens":8000,"MAX_TOKENS":1,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","Model":"n","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"metadata":{"a":{"b":{"c":[[[{"d":1}]]]}}},"messages":[{"role":"system","content":"hi"}]}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, countOnly bool) {
		r, e := ParseMessagesRequest(body, countOnly)
		if e != nil {
			if r != nil || e.Status != http.StatusBadRequest || !json.Valid(ErrorBody(e, "")) || !json.Valid(ErrorEvent(e)[len("event: error\ndata: "):]) {
				t.Fatalf("refusal %v with request %v", e, r)
			}
			return
		}
		if r.Model == "" || len(r.Messages) == 0 || (!countOnly && (r.MaxTokens == nil || *r.MaxTokens < 1)) {
			t.Fatalf("accepted an invalid request: %+v", r)
		}
		for _, m := range r.Messages {
			if m.Role == "" {
				t.Fatalf("accepted a turn without a role")
			}
		}
		// What the gateway read is what a provider, which matches member
		// names exactly, reads: no case variant slipped past.
		var exact struct {
			Model     *string `json:"model"`
			MaxTokens *int    `json:"max_tokens"`
		}
		if err := json.Unmarshal(body, &exact); err == nil {
			var top map[string]json.RawMessage
			_ = json.Unmarshal(body, &top)
			if m, ok := top["model"]; !ok || string(m) != strconv.Quote(r.Model) && !json.Valid(m) {
				t.Fatalf("model read as %q, sent as %s", r.Model, m)
			}
			if mt, ok := top["max_tokens"]; r.MaxTokens != nil && (!ok || strings.TrimSpace(string(mt)) != strconv.Itoa(*r.MaxTokens)) {
				t.Fatalf("max_tokens read as %d, sent as %s", *r.MaxTokens, mt)
			}
		}
		if d := depth(body); d > 128 {
			t.Fatalf("accepted a body nested %d deep", d)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("an accepted request does not encode: %v", err)
		}
	})
}

// depth is how deep a JSON text nests, strings skipped.
func depth(b []byte) int {
	d, most, in, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case in:
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}
