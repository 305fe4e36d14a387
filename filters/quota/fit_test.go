package quota

import (
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/state/store"
)

// fitPolicy has a route that fits the output cap to the context window,
// and two models whose windows leave a 1 206-token prompt (6 of chat
// overhead, 4 800 ASCII bytes) different room: small 2 000 − 1 206 = 794
// tokens, large all of its 1 000-token maximum. small writes dearer.
var fitPolicy = fmt.Sprintf(`
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
models:
  - {name: small, provider: oa, context_window: 2000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 20}, fallback: [large]}
  - {name: large, provider: oa, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 10}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, quota], fit_output_to_context: %%s}
tenants:
  - name: acme
    budget_usd: {daily: 10}
    keys: [{name: k, sha256: %s}]
`, sha("sk-acme"))

// TestWorstCaseFitsTheContextWindow: on a route that fits the output cap
// to the window, the reservation is the plan's dearest fitted worst case:
// small's 794 tokens at $20 per million, not the 1 000 it was asked for.
// Without the option small cannot serve the request at all.
func TestWorstCaseFitsTheContextWindow(t *testing.T) {
	body := fmt.Sprintf(`{"model":"small","max_tokens":1000,"messages":[{"role":"user","content":%q}]}`, strings.Repeat("abcd", 1200))
	daily := store.BudgetLine{Scope: store.Scope{Tenant: "acme"}, Period: store.Daily, Limit: 10_000_000}
	tests := []struct {
		name         string
		fit          string
		body         string
		wantPlan     []string
		wantReserved int64
		wantCode     string
	}{
		{"fitted: the dearest target's fitted worst case", "true", body, []string{"small", "large"}, 1_206 + 794*20, ""},
		{"fitted, a model whose window holds the cap: the cap", "true", strings.Replace(body, `"small"`, `"large"`, 1), []string{"large"}, 1_206 + 1_000*10, ""},
		{"not fitted: refused", "false", body, nil, 0, "context_length_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRigFor(t, fmt.Sprintf(fitPolicy, tt.fit), t0)
			x, e := r.send("sk-acme", tt.body)
			if tt.wantCode != "" {
				if e == nil || e.Code != tt.wantCode {
					t.Fatalf("got %v, want %s", e, tt.wantCode)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			if got := planOf(x); fmt.Sprint(got) != fmt.Sprint(tt.wantPlan) {
				t.Errorf("plan %v, want %v", got, tt.wantPlan)
			}
			if got := r.budget(daily.Scope, daily.Period).Reserved; got != tt.wantReserved {
				t.Errorf("reserved %d, want %d", got, tt.wantReserved)
			}
		})
	}
}
