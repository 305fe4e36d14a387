package filters

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

func TestAcceptable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       bool
	}{
		{name: "stopped with text", body: `{"choices":[{"message":{"content":"yes"},"finish_reason":"stop"}]}`, want: true},
		{name: "a tool call", body: `{"choices":[{"message":{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`, want: true},
		{name: "cut at its length", body: `{"choices":[{"message":{"content":"ye"},"finish_reason":"length"}]}`},
		{name: "filtered", body: `{"choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}`},
		{name: "said nothing", body: `{"choices":[{"message":{"content":"  "},"finish_reason":"stop"}]}`},
		{name: "an error envelope", body: `{"error":{"message":"no"}}`},
		{name: "not JSON", body: `oops`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Acceptable([]byte(tt.body)); got != tt.want {
				t.Errorf("Acceptable = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestParseBest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reply  string
		n      int
		want   int
		wantOK bool
	}{
		{reply: "Best: 2", n: 3, want: 2, wantOK: true},
		{reply: "I think best: 1.", n: 2, want: 1, wantOK: true},
		{reply: "Best: 4", n: 3},
		{reply: "Best: 0", n: 3},
		{reply: "the second one", n: 3},
	}
	for _, tt := range tests {
		got, ok := ParseBest(tt.reply, tt.n)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseBest(%q, %d) = %d, %t; want %d, %t", tt.reply, tt.n, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestJudgeRequestBounds: the judge reads the end of a long conversation
// and the start of each answer, within the bounds the reservation counts.
func TestJudgeRequestBounds(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", JudgeClipBytes) // two bytes each
	conv := []openaiapi.Message{{Role: "user", Content: openaiapi.Content{Text: "first " + long + " LAST", Set: true}}}
	answer := []byte(`{"choices":[{"message":{"content":"START ` + long + `"},"finish_reason":"stop"}]}`)
	r := JudgeRequest("judge", conv, [][]byte{answer, answer})
	text := r.Messages[0].Content.Text
	if !strings.Contains(text, "LAST") || strings.Contains(text, "first ") || !strings.Contains(text, "<answer 2>\nSTART") {
		t.Errorf("judge reads the wrong parts: %.200q", text)
	}
	if len(text) > 3*JudgeClipBytes+4*JudgeOverheadTokens {
		t.Errorf("judge prompt of %d bytes is past its bounds", len(text))
	}
	if *r.MaxTokens != JudgeMaxTokens || r.Model != "judge" {
		t.Errorf("judge request %+v", r)
	}
}
