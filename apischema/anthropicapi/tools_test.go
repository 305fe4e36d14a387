package anthropicapi

import (
	"strings"
	"testing"
)

func TestPricedToolUses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tools   string
		want    int
		wantMsg string
	}{
		{name: "client tools", tools: `[{"name":"Read","input_schema":{}},{"type":"custom","name":"x","input_schema":{}}]`},
		{name: "Anthropic's client-run tools", tools: `[{"type":"bash_20250124","name":"bash"},{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"}]`},
		{name: "web fetch is billed as tokens", tools: `[{"type":"web_fetch_20250910","name":"web_fetch"}]`},
		{name: "web search within its uses", tools: `[{"type":"web_search_20250305","name":"web_search","max_uses":5},{"type":"web_search_20250305","name":"ws2","max_uses":2}]`, want: 7},
		{name: "web search without a bound", tools: `[{"type":"web_search_20250305","name":"web_search"}]`, wantMsg: "tools.0.max_uses: required"},
		{name: "code execution", tools: `[{"name":"Read"},{"type":"code_execution_20250825","name":"code_execution"}]`, wantMsg: "tools.1: tool type \"code_execution_20250825\" is not served"},
		{name: "a server tool newer than the gateway", tools: `[{"type":"deep_research_20270101","name":"dr"}]`, wantMsg: "not known to this gateway"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, e := ParseMessagesRequest([]byte(`{"model":"m","max_tokens":5,"tools":`+tc.tools+`,"messages":[{"role":"user","content":"hi"}]}`), false)
			if e != nil {
				t.Fatal(e)
			}
			got, e := PricedToolUses(r)
			switch {
			case tc.wantMsg == "" && e != nil:
				t.Fatalf("refused: %v", e)
			case tc.wantMsg != "" && (e == nil || e.Status != 400 || e.Param != "tools" || !strings.Contains(e.Message, tc.wantMsg)):
				t.Fatalf("got %v, want a 400 on tools saying %q", e, tc.wantMsg)
			case got != tc.want:
				t.Errorf("got %d uses, want %d", got, tc.want)
			}
		})
	}
}
