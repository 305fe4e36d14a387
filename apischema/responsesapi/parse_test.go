package responsesapi

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
		{name: "unknown item", body: `{"model":"m","input":[{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","image_url":"u"}}]}`},
		{name: "unknown role", body: `{"model":"m","input":[{"role":"critic","content":"x"}]}`},
		{name: "unknown part", body: `{"model":"m","input":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}]}`},
		{name: "image output", body: `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"u"}]}]}`},
		{name: "image from the assistant", body: `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"u"}]}]}`},
		{name: "codex defaults", body: `{"model":"m","input":"hi","store":false,"include":["reasoning.encrypted_content"],"reasoning":{"summary":"auto"},"prompt_cache_key":"k","client_metadata":{"a":"b"},
			"tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"g","strict":false,"parameters":{"type":"object"}}]},{"type":"web_search","external_web_access":false}],
			"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}}`},
		{name: "namespaced call and reasoning items", body: `{"model":"m","input":[{"role":"user","content":"a"},{"type":"reasoning","summary":[],"encrypted_content":"e"},
			{"type":"function_call","call_id":"c","namespace":"ns","name":"g","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}]}`},
		{name: "hosted tool choice", body: `{"model":"m","input":"hi","tools":[{"type":"web_search"}],"tool_choice":{"type":"web_search"}}`},
		{name: "future text format", body: `{"model":"m","input":"hi","text":{"format":{"type":"grammar","syntax":"lark"}}}`},
		{name: "message without role", body: `{"model":"m","input":[{"type":"message","content":"x"}]}`, wantParam: "input[0]", wantMsg: "needs a role"},
		{name: "message without content", body: `{"model":"m","input":[{"role":"user"}]}`, wantParam: "input[0]", wantMsg: "needs content"},
		{name: "call without call_id", body: `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, wantParam: "input[0]"},
		{name: "output without call_id", body: `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, wantParam: "input[0]"},
		{name: "image output by file id", body: `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","file_id":"f"}]}]}`, wantParam: "input[0].output[0]", wantCode: "unsupported_parameter"},
		{name: "image by file id", body: `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, wantParam: "input[0].content[0]", wantCode: "unsupported_parameter"},
		{name: "image without url", body: `{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`, wantParam: "input[0].content[0]", wantMsg: "needs image_url"},
		{name: "nameless function", body: `{"model":"m","input":"hi","tools":[{"type":"function"}]}`, wantParam: "tools[0]"},
		{name: "typeless tool", body: `{"model":"m","input":"hi","tools":[{"name":"f"}]}`, wantParam: "tools[0]"},
		{name: "empty namespace", body: `{"model":"m","input":"hi","tools":[{"type":"namespace","name":"ns","tools":[]}]}`, wantParam: "tools[0]"},
		{name: "nameless function in a namespace", body: `{"model":"m","input":"hi","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function"}]}]}`, wantParam: "tools[0].tools[0]"},
		{name: "namespace in a namespace", body: `{"model":"m","input":"hi","tools":[{"type":"namespace","name":"ns","tools":[{"type":"namespace","name":"in","tools":[{"type":"function","name":"f"}]}]}]}`, wantParam: "tools[0].tools[0]"},
		{name: "tool_choice a number", body: `{"model":"m","input":"hi","tool_choice":5}`, wantMsg: "tool_choice must be"},
		{name: "tool_choice without a type", body: `{"model":"m","input":"hi","tool_choice":{"name":"f"}}`, wantMsg: "tool_choice must be"},
		{name: "typeless text format", body: `{"model":"m","input":"hi","text":{"format":{}}}`, wantParam: "text.format"},
		{name: "max_output_tokens 0", body: `{"model":"m","input":"hi","max_output_tokens":0}`, wantParam: "max_output_tokens"},
		{name: "temperature 3", body: `{"model":"m","input":"hi","temperature":3}`, wantParam: "temperature"},
		{name: "json_schema without schema", body: `{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"r"}}}`, wantParam: "text.format"},
		{name: "flex tier", body: `{"model":"m","input":"hi","service_tier":"flex"}`, wantParam: "service_tier"},
		{name: "the default prompt cache lifetime", body: `{"model":"m","input":"hi","prompt_cache_key":"k","prompt_cache_options":{"ttl":"30m"}}`},
		{name: "a longer prompt cache lifetime", body: `{"model":"m","input":"hi","prompt_cache_options":{"ttl":"12h"}}`, wantParam: "prompt_cache_options.ttl"},
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

// TestToolsBound: the tools of a request, a namespace's counted one by
// one, are bounded.
func TestToolsBound(t *testing.T) {
	fn := `{"type":"function","name":"f"}`
	ns := `{"type":"namespace","name":"ns","tools":[` + strings.Repeat(fn+",", MaxTools/2-2) + fn + `]}`
	for _, tt := range []struct {
		name, tools string
		wantErr     bool
	}{
		{"at the bound", ns + "," + ns, false},
		{"one more", ns + "," + ns + "," + fn, true},
	} {
		_, e := ParseRequest([]byte(`{"model":"m","input":"hi","tools":[` + tt.tools + `]}`))
		if (e != nil) != tt.wantErr || e != nil && e.Param != "tools" {
			t.Errorf("%s: %v, want refused %v", tt.name, e, tt.wantErr)
		}
	}
}

// TestToolsKeepTheirBytes: tools and a tool choice of any type encode as
// the client wrote them, so a response repeats them, while the parts the
// gateway reads are decoded.
func TestToolsKeepTheirBytes(t *testing.T) {
	tools := `[{"type":"function","name":"f","strict":false,"parameters":{"type":"object"}},{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"g","defer_loading":true}]},{"type":"web_search","external_web_access":false,"name":{"not":"a string"}}]`
	choice := `{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"},{"type":"function","namespace":"ns","name":"g"},{"type":"web_search"}]}`
	r, e := ParseRequest([]byte(`{"model":"m","input":"hi","tools":` + tools + `,"tool_choice":` + choice + `}`))
	if e != nil {
		t.Fatal(e)
	}
	gotTools, _ := json.Marshal(r.Tools)
	gotChoice, _ := json.Marshal(r.ToolChoice)
	if string(gotTools) != tools || string(gotChoice) != choice {
		t.Errorf("tools %s, choice %s; want the client's bytes", gotTools, gotChoice)
	}
	if ns := r.Tools[1]; ns.Type != ToolNamespace || ns.Name != "ns" || len(ns.Tools) != 1 || ns.Tools[0].Name != "g" || r.Tools[2].Type != "web_search" {
		t.Errorf("decoded tools %+v", r.Tools)
	}
	if c := r.ToolChoice; c.Mode != "required" || len(c.Allowed) != 2 || c.Allowed[1] != [2]string{"ns", "g"} {
		t.Errorf("decoded choice %+v", c)
	}
}

// TestUnknownItemsAreTheirTypeAlone: an item or part of a type the
// gateway does not read decodes to its type, whatever its members hold.
func TestUnknownItemsAreTheirTypeAlone(t *testing.T) {
	r, e := ParseRequest([]byte(`{"model":"m","input":[{"type":"compaction","encrypted_content":"e","output":{"x":1},"role":7},
		{"role":"user","content":[{"type":"input_audio","text":{"x":1}}]}]}`))
	if e != nil {
		t.Fatal(e)
	}
	if got := r.Input.Items; got[0].Type != "compaction" || got[0].Role != "" || got[0].Output != nil || got[1].Content[0].Type != "input_audio" || got[1].Content[0].Text != "" {
		t.Errorf("items %+v", got)
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
		`{"model":"m","input":[{"type":"reasoning","encrypted_content":"e"},{"type":"function_call","call_id":"c","namespace":"ns","name":"g","arguments":"{}"}],"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"g"}]},{"type":"web_search"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}}`,
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
