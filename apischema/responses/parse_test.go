package responses

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestParseRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		wantParam string // "" with wantMsg "" for a request that parses
		wantCode  string
		wantMsg   string
	}{
		{name: "text input", body: `{"model":"m","input":"hi"}`},
		{name: "store false and stateless options", body: `{"model":"m","input":"hi","store":false,"previous_response_id":null,"conversation":null,"truncation":"auto","include":["reasoning.encrypted_content"]}`},
		{name: "items", body: `{"model":"m","instructions":"be brief","max_output_tokens":50,
			"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"},
			"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"https://x/y.png"}]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"b"}]},
			{"type":"reasoning","id":"rs_1","summary":[]},
			{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":"ok"}]}`},
		{name: "empty body", body: ``, wantMsg: "empty"},
		{name: "not an object", body: `[1]`, wantMsg: "JSON object"},
		{name: "bad json", body: `{"model":`, wantMsg: "not valid JSON"},
		{name: "twice in one object", body: `{"model":"m","Model":"n","input":"hi"}`, wantParam: "Model", wantMsg: "send each member once"},
		{name: "no model", body: `{"input":"hi"}`, wantParam: "model", wantCode: "missing_required_parameter"},
		{name: "no input", body: `{"model":"m"}`, wantParam: "input", wantCode: "missing_required_parameter"},
		{name: "empty items", body: `{"model":"m","input":[]}`, wantParam: "input"},
		{name: "input a number", body: `{"model":"m","input":5}`, wantMsg: "input must be a string or an array"},
		{name: "previous_response_id", body: `{"model":"m","input":"hi","previous_response_id":"resp_1"}`, wantParam: "previous_response_id", wantCode: "unsupported_parameter", wantMsg: "keeps no responses"},
		{name: "store true", body: `{"model":"m","input":"hi","store":true}`, wantParam: "store", wantCode: "unsupported_parameter", wantMsg: "store: true is not supported"},
		{name: "conversation", body: `{"model":"m","input":"hi","conversation":"conv_1"}`, wantParam: "conversation", wantCode: "unsupported_parameter"},
		{name: "background", body: `{"model":"m","input":"hi","background":true}`, wantParam: "background", wantCode: "unsupported_parameter"},
		{name: "stored prompt", body: `{"model":"m","input":"hi","prompt":{"id":"pmpt_1"}}`, wantParam: "prompt", wantCode: "unsupported_parameter"},
		{name: "item reference", body: `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, wantParam: "input[0]", wantCode: "unsupported_parameter"},
		{name: "unknown item", body: `{"model":"m","input":[{"type":"computer_call_output","call_id":"c"}]}`, wantParam: "input[0]", wantCode: "unsupported_parameter"},
		{name: "message without role", body: `{"model":"m","input":[{"type":"message","content":"x"}]}`, wantParam: "input[0]", wantMsg: "needs a role"},
		{name: "unknown role", body: `{"model":"m","input":[{"role":"tool","content":"x"}]}`, wantParam: "input[0]", wantMsg: "unknown role"},
		{name: "message without content", body: `{"model":"m","input":[{"role":"user"}]}`, wantParam: "input[0]", wantMsg: "needs content"},
		{name: "call without call_id", body: `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, wantParam: "input[0]"},
		{name: "output without call_id", body: `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, wantParam: "input[0]"},
		{name: "image output", body: `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"u"}]}]}`, wantParam: "input[0]"},
		{name: "image by file id", body: `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, wantParam: "input[0].content[0]", wantCode: "unsupported_parameter"},
		{name: "image from the assistant", body: `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"u"}]}]}`, wantParam: "input[0].content[0]"},
		{name: "refusal from the user", body: `{"model":"m","input":[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]}`, wantParam: "input[0].content[0]"},
		{name: "unknown part", body: `{"model":"m","input":[{"role":"user","content":[{"type":"input_audio"}]}]}`, wantParam: "input[0].content[0]"},
		{name: "built-in tool", body: `{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`, wantParam: "tools[0]", wantCode: "unsupported_parameter"},
		{name: "nameless function", body: `{"model":"m","input":"hi","tools":[{"type":"function"}]}`, wantParam: "tools[0]"},
		{name: "bad tool_choice", body: `{"model":"m","input":"hi","tool_choice":"sometimes"}`, wantMsg: "tool_choice must be"},
		{name: "max_output_tokens 0", body: `{"model":"m","input":"hi","max_output_tokens":0}`, wantParam: "max_output_tokens"},
		{name: "temperature 3", body: `{"model":"m","input":"hi","temperature":3}`, wantParam: "temperature"},
		{name: "json_schema without schema", body: `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"r"}}}`, wantParam: "text.format"},
		{name: "flex tier", body: `{"model":"m","input":"hi","service_tier":"flex"}`, wantParam: "service_tier"},
		{name: "wrong type", body: `{"model":"m","input":"hi","max_output_tokens":"5"}`, wantParam: "max_output_tokens", wantCode: "invalid_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, e := ParseRequest([]byte(tt.body))
			if tt.wantParam == "" && tt.wantMsg == "" {
				if e != nil || r == nil {
					t.Fatalf("refused: %v", e)
				}
				return
			}
			if e == nil {
				t.Fatal("accepted, want a refusal")
			}
			if e.Status != http.StatusBadRequest || e.Param != tt.wantParam || !strings.Contains(e.Message, tt.wantMsg) || tt.wantCode != "" && e.Code != tt.wantCode {
				t.Errorf("got %d param %q code %q %q; want 400 param %q code %q containing %q", e.Status, e.Param, e.Code, e.Message, tt.wantParam, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func TestTextInputIsOneUserMessage(t *testing.T) {
	r, e := ParseRequest([]byte(`{"model":"m","input":"hello"}`))
	if e != nil {
		t.Fatal(e)
	}
	if len(r.Input.Items) != 1 || r.Input.Items[0].Role != "user" || len(r.Input.Items[0].Content) != 1 || r.Input.Items[0].Content[0].Text != "hello" {
		t.Fatalf("got %+v, want one user message saying hello", r.Input.Items)
	}
}

func TestErrorEvent(t *testing.T) {
	e := invalid("bad_thing", "input", "input is bad")
	ev := ErrorEvent(e, 7)
	name, data, ok := strings.Cut(strings.TrimSuffix(string(ev), "\n\n"), "\ndata: ")
	if !ok || name != "event: error" {
		t.Fatalf("event %q is not a named error event", ev)
	}
	var got struct {
		Type           string
		SequenceNumber int `json:"sequence_number"`
		Code, Message  string
		Param          string
		Error          struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatal(err)
	}
	if got.Type != "error" || got.SequenceNumber != 7 || got.Code != "bad_thing" || got.Param != "input" || got.Message != "input is bad" ||
		got.Error.Message != "input is bad" || got.Error.Type != "invalid_request_error" || got.Error.Code != "bad_thing" {
		t.Errorf("got %+v", got)
	}
}

// FuzzParseRequest: any body either parses into a request whose checked
// fields hold, or is refused with a 400 in OpenAI's envelope; nothing
// panics.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","instructions":"s","tools":[{"type":"function","name":"f"}],"input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}]}`,
		`{"model":"m","input":"hi","store":true}`, `{"model":"m","input":"hi","previous_response_id":"r"}`,
		`{"model":"m","input":[]}`, `[]`, `{`, `null`, `{"model":"m","input":[{"type":"item_reference","id":"x"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, e := ParseRequest(body)
		if e != nil {
			var env struct {
				Error *struct{ Message string } `json:"error"`
			}
			if r != nil || e.Status != http.StatusBadRequest || json.Unmarshal(e.Body(), &env) != nil || env.Error == nil || env.Error.Message == "" {
				t.Fatalf("refusal %v with request %v", e, r)
			}
			return
		}
		if r.Model == "" || len(r.Input.Items) == 0 || r.Store != nil && *r.Store || r.PreviousResponseID != nil && *r.PreviousResponseID != "" {
			t.Fatalf("accepted an invalid request: %+v", r)
		}
		for _, it := range r.Input.Items {
			if it.Type == ItemReference {
				t.Fatalf("accepted an item reference")
			}
			if (it.Type == "" || it.Type == ItemMessage) && it.Role == "" {
				t.Fatalf("accepted a message without a role")
			}
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("an accepted request does not encode: %v", err)
		}
	})
}
