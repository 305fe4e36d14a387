package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestFitOutputToContext: on a route that fits the output cap to the
// context window, a request whose prompt (about 2 000 tokens) and
// max_tokens (1 500) overflow its model's 3 000-token window is served,
// and the provider gets the cap the window leaves, 1 000: an OpenAI model
// through the chat translator, an Anthropic model through the Messages
// pass-through. The Responses route, without the option, refuses the same
// request before any provider is called.
func TestFitOutputToContext(t *testing.T) {
	s := options(t)
	text := strings.Repeat("abcd", 1994) // 1 994 tokens, and 6 of chat overhead
	tests := []struct {
		name, path, provider, body string
		wantStatus                 int
		wantCap                    string // the member of the provider's body holding the cap
		wantCode                   string
	}{
		{"chat completions, OpenAI", "/v1/chat/completions", "openai",
			fmt.Sprintf(`{"model":"tiny-gpt","max_tokens":1500,"messages":[{"role":"user","content":%q}]}`, text), http.StatusOK, "max_completion_tokens", ""},
		{"Messages, Anthropic by pass-through", "/v1/messages", "anthropic",
			fmt.Sprintf(`{"model":"tiny-claude","max_tokens":1500,"messages":[{"role":"user","content":%q}]}`, text), http.StatusOK, "max_tokens", ""},
		{"Responses, without the option", "/v1/responses", "openai",
			fmt.Sprintf(`{"model":"tiny-gpt","max_output_tokens":1500,"input":%q}`, text), http.StatusBadRequest, "", "context_length_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := s.Sim.Stats(tt.provider)
			if err != nil {
				t.Fatal(err)
			}
			a := postTo(t, s, tt.path, demoKey, tt.body)
			if a.status != tt.wantStatus {
				t.Fatalf("answer %d %s, want %d", a.status, a.body, tt.wantStatus)
			}
			after, err := s.Sim.Stats(tt.provider)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantCode != "" {
				if a.code() != tt.wantCode || after.Requests != before.Requests {
					t.Errorf("code %q, %d requests reached %s; want %s before any provider", a.code(), after.Requests-before.Requests, tt.provider, tt.wantCode)
				}
				return
			}
			if got := lastBody(t, s, tt.provider)[tt.wantCap]; got != float64(1000) {
				t.Errorf("%s got %s %v, want 1000 (3 000 - 2 000 of prompt)", tt.provider, tt.wantCap, got)
			}
		})
	}
}
