package openaiapi

import "testing"

func TestTextTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"four ascii bytes", "abcd", 1},
		{"five ascii bytes round up", "abcde", 2},
		{"cjk one per char", "你好世界", 4},
		{"mixed", "hi 你好", 1 + 2},
	}
	for _, tt := range tests {
		if got := TextTokens(tt.in); got != tt.want {
			t.Errorf("%s: TextTokens(%q) = %d, want %d", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestEstimatePromptTokens(t *testing.T) {
	t.Parallel()
	r, err := ParseChatRequest([]byte(`{"model":"m","messages":[
		{"role":"system","content":"be brief"},
		{"role":"user","content":[{"type":"text","text":"what is this"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"look","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"a cat"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// prime 3; system 3+2; user 3+3+85; assistant 3+(8+1+1); tool 3+2
	want := 3 + 5 + 91 + 13 + 5
	if got := EstimatePromptTokens(r); got != want {
		t.Errorf("EstimatePromptTokens = %d, want %d", got, want)
	}
	if !r.HasImages() || !r.UsesTools() || r.WantsJSON() {
		t.Errorf("HasImages %v UsesTools %v WantsJSON %v", r.HasImages(), r.UsesTools(), r.WantsJSON())
	}
}
