package quota

import (
	"fmt"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// catalogPolicy has a model, an alias of it, and an open pattern whose
// unknown models are priced at a stated worst case: "hello" (8 prompt
// tokens) with max_tokens 20 may cost future-* 8×100 + 20×300 = 6,800
// micro-USD and small 8×1 + 20×2 = 48.
var catalogPolicy = fmt.Sprintf(`
gateway:
  governor: {high_at: 0.8, cheap_only_at: 0.95, floor_usd: 0}
providers:
  - {name: pa, kind: openai, base_url: "http://127.0.0.1:1"}
models:
  - {name: small, provider: pa, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 2}}
  - {match: "future-*", provider: pa, unpriced: worst_case, max_output_tokens: 1000, price_usd_per_mtok: {input: 100, output: 300}}
aliases:
  - {name: house, to: small}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, quota]}
tenants:
  - name: tight
    budget_usd: {daily: 0.01}
    keys: [{name: k, sha256: %s}]
`, sha("sk-tight"))

// TestPatternAndAliasBudgets: a model only a pattern serves is reserved
// at the pattern's worst case, so a budget holds against models nobody
// priced; an alias reserves as its model does.
func TestPatternAndAliasBudgets(t *testing.T) {
	r := newRigFor(t, catalogPolicy, t0)
	daily := func() store.BudgetState { return r.budget(store.Scope{Tenant: "tight"}, store.Daily) }
	tests := []struct {
		name         string
		model        string
		wantPlan     string
		wantReserved int64 // the day's reservations after the request
		wantCode     string
	}{
		{name: "an unknown model at the pattern's worst case", model: "future-1", wantPlan: "[future-1]", wantReserved: 6800},
		{name: "a second one does not fit beside it", model: "future-2", wantReserved: 6800, wantCode: "insufficient_quota"},
		{name: "an alias reserves as its model", model: "house", wantPlan: "[small]", wantReserved: 6800 + 48},
	}
	var held []*filters.Exchange
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, refusal := r.send("sk-tight", chat(tt.model, 20))
			switch {
			case tt.wantCode != "" && (refusal == nil || refusal.Code != tt.wantCode):
				t.Fatalf("got %+v, want %s", refusal, tt.wantCode)
			case tt.wantCode == "" && refusal != nil:
				t.Fatalf("refused: %+v", refusal)
			case tt.wantCode == "":
				if got := fmt.Sprint(planOf(x)); got != tt.wantPlan {
					t.Errorf("plan %s, want %s", got, tt.wantPlan)
				}
				held = append(held, x)
			}
			if got := daily().Reserved; got != tt.wantReserved {
				t.Errorf("reserved %d micro-USD, want %d", got, tt.wantReserved)
			}
		})
	}
	// Settled at what the answers cost, at the same prices.
	for _, x := range held {
		r.served(x)
		r.finish(x, filters.Usage{Known: true, PromptTokens: 8, CompletionTokens: 10, CostMicros: x.Plan[0].Model.Price.Micros(policy.Tokens{Prompt: 8, Completion: 10})}, nil)
	}
	if st := daily(); st.Reserved != 0 || st.Spent != 800+3000+8+20 {
		t.Errorf("after settling: reserved %d, spent %d; want 0 and %d", st.Reserved, st.Spent, 800+3000+8+20)
	}
}
