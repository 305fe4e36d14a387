package router

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/sticky"
)

// TestFitOutputToContext: a route that fits the output cap to the context
// window plans a request whose prompt and cap overflow a model's window,
// as long as the prompt leaves the model room to write; without the
// option the same request is refused, as it is with it when the prompt
// alone fills the window.
func TestFitOutputToContext(t *testing.T) {
	t.Parallel()
	const pol = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
models:
  - {name: small, provider: oa, context_window: 1000, max_output_tokens: 800, capabilities: [chat], price_usd_per_mtok: {input: 1, output: 1}}
  - {name: large, provider: oa, context_window: 5000, max_output_tokens: 800, capabilities: [chat], price_usd_per_mtok: {input: 2, output: 2}}
routes:
  - name: chat
    path: /v1/chat/completions
    api: chat_completions
    fit_output_to_context: %v
`
	// About 606 tokens of prompt: 600 of text, 6 of chat overhead.
	prompt := strings.Repeat("abcd", 600)
	tests := []struct {
		name     string
		fit      bool
		body     string
		wantPlan string
		wantCode string
	}{
		{"named, cap past the window: refused without the option", false,
			fmt.Sprintf(`{"model":"small","max_tokens":800,"messages":[{"role":"user","content":%q}]}`, prompt), "", "context_length_exceeded"},
		{"named, cap past the window: planned with it", true,
			fmt.Sprintf(`{"model":"small","max_tokens":800,"messages":[{"role":"user","content":%q}]}`, prompt), "small", ""},
		{"named, the prompt alone fills the window: refused with it too", true,
			fmt.Sprintf(`{"model":"small","messages":[{"role":"user","content":%q}]}`, strings.Repeat("abcd", 1000)), "", "context_length_exceeded"},
		{"auto: the small model is a candidate only with the option", false,
			fmt.Sprintf(`{"model":"auto","max_tokens":800,"messages":[{"role":"user","content":%q}]}`, prompt), "large", ""},
		{"auto: both models with it", true,
			fmt.Sprintf(`{"model":"auto","max_tokens":800,"messages":[{"role":"user","content":%q}]}`, prompt), "small,large", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(fmt.Sprintf(pol, tt.fit))}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewRouter(p, p.Routes[0], fakeHealth{}, sticky.New(10, time.Now))
			if err != nil {
				t.Fatal(err)
			}
			d, e := r.Decide(&Query{Chat: chat(t, tt.body), Hash: 1})
			if tt.wantCode != "" {
				if e == nil || e.Status != http.StatusBadRequest || e.Code != tt.wantCode {
					t.Fatalf("got %v (plan %s), want 400 %s", e, names(d.Plan), tt.wantCode)
				}
				return
			}
			if e != nil {
				t.Fatalf("refused: %v", e)
			}
			if got := names(d.Plan); got != tt.wantPlan {
				t.Errorf("plan %s, want %s", got, tt.wantPlan)
			}
		})
	}
}
