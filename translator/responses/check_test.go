package responses

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/responsesapi"
)

// TestCheckItems: what the parser passes on for OpenAI but a chat request
// cannot carry is refused, naming the field and the provider; what only
// OpenAI reads back is not.
func TestCheckItems(t *testing.T) {
	tests := []struct {
		name, body string
		wantParam  string // "": accepted
	}{
		{"codex turn", `{"model":"m","input":[{"role":"developer","content":"d"},{"role":"user","content":"u"},{"type":"reasoning","encrypted_content":"e"},
			{"type":"web_search_call","action":{"type":"search"}},{"type":"function_call","call_id":"c","namespace":"ns","name":"f","arguments":"{}"},
			{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"ok"}]}],
			"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]},{"type":"web_search"},{"type":"custom","name":"apply_patch"}]}`, ""},
		{"unknown item", `{"model":"m","input":[{"role":"user","content":"u"},{"type":"computer_call_output","call_id":"c"}]}`, "input[1].type"},
		{"unknown role", `{"model":"m","input":[{"role":"critic","content":"u"}]}`, "input[0].role"},
		{"unknown part", `{"model":"m","input":[{"role":"user","content":[{"type":"input_audio"}]}]}`, "input[0].content[0]"},
		{"image from the assistant", `{"model":"m","input":[{"role":"assistant","content":[{"type":"input_image","image_url":"u"}]}]}`, "input[0].content[0]"},
		{"refusal from the user", `{"model":"m","input":[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]}`, "input[0].content[0]"},
		{"future text format", `{"model":"m","input":"u","text":{"format":{"type":"grammar"}}}`, "text.format.type"},
		{"custom tool in a namespace", `{"model":"m","input":"u","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"},{"type":"custom","name":"g"}]}]}`, "tools[0].tools[1]"},
	}
	for _, tt := range tests {
		r, e := responsesapi.ParseRequest([]byte(tt.body))
		if e != nil {
			t.Fatalf("%s: the parser refused: %v", tt.name, e)
		}
		e = checkItems(r, "anth")
		switch {
		case tt.wantParam == "" && e != nil:
			t.Errorf("%s: refused: %v", tt.name, e)
		case tt.wantParam != "" && (e == nil || e.Param != tt.wantParam || e.Status != 400 || !strings.Contains(e.Message, "provider anth")):
			t.Errorf("%s: got %v; want a 400 naming %s and the provider", tt.name, e, tt.wantParam)
		}
	}
}

// TestToolNames: a namespace's function keeps its name unless another
// tool has it, and every name maps back to what the client calls it.
func TestToolNames(t *testing.T) {
	r, e := responsesapi.ParseRequest([]byte(`{"model":"m","input":"u","tools":[{"type":"function","name":"run"},
		{"type":"namespace","name":"a","tools":[{"type":"function","name":"run"},{"type":"function","name":"spawn"},{"type":"function","name":"wait"}]},
		{"type":"namespace","name":"b","tools":[{"type":"function","name":"wait"}]}]}`))
	if e != nil {
		t.Fatal(e)
	}
	n := namesOf(r.Tools)
	for _, tt := range []struct{ ns, name, flat string }{
		{"", "run", "run"}, {"a", "run", "a__run"}, {"a", "spawn", "spawn"}, {"a", "wait", "a__wait"}, {"b", "wait", "b__wait"},
		{"gone", "f", "gone__f"},
	} {
		if got := n.chat(tt.ns, tt.name); got != tt.flat {
			t.Errorf("chat(%q, %q) = %q, want %q", tt.ns, tt.name, got, tt.flat)
		}
		if tt.ns == "gone" {
			continue
		}
		if ns, name := n.client(tt.flat); ns != tt.ns || name != tt.name {
			t.Errorf("client(%q) = %q, %q; want %q, %q", tt.flat, ns, name, tt.ns, tt.name)
		}
	}
}
