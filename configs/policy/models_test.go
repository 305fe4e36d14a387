package policy_test

import (
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

// TestDeployments: entries sharing a name are one model on several
// deployments: each with its provider, upstream, price, weight and limits,
// all sharing the first's model-wide fields and fallbacks.
func TestDeployments(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(`
providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:9101"}
  - {name: east, kind: azure_openai, base_url: "http://127.0.0.1:9102", api_version: "2024-10-21"}
  - {name: west, kind: azure_openai, base_url: "http://127.0.0.1:9103", api_version: "2024-10-21"}
models:
  - name: gpt-4o
    provider: openai
    context_window: 128000
    max_output_tokens: 16384
    capabilities: [chat, tools]
    price_usd_per_mtok: {input: 2.5, output: 10}
    balance: least_in_flight
    weight: 3
    fallback: [small]
  - {name: gpt-4o, provider: east, upstream: gpt4o-east, price_usd_per_mtok: {input: 2.75, output: 11}, limits: {tokens_per_minute: 30000}}
  - {name: gpt-4o, provider: west, weight: 0, capabilities: [tools, chat], context_window: 128000}
  - {name: small, provider: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Models) != 2 {
		t.Fatalf("%d models, want 2 (gpt-4o and small)", len(p.Models))
	}
	m := p.Model("gpt-4o")
	if len(m.Deployments) != 3 || m.Deployments[0] != m {
		t.Fatalf("deployments %v", m.Deployments)
	}
	tests := []struct {
		provider, upstream string
		price              policy.Price
		weight, tpm        int
	}{
		{"openai", "gpt-4o", policy.Price{InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000, CachedInputPerMTok: 2_500_000, CacheWritePerMTok: 2_500_000, CacheWrite1hPerMTok: 2_500_000}, 3, 0},
		{"east", "gpt4o-east", policy.Price{InputPerMTok: 2_750_000, OutputPerMTok: 11_000_000, CachedInputPerMTok: 2_750_000, CacheWritePerMTok: 2_750_000, CacheWrite1hPerMTok: 2_750_000}, 1, 30000},
		{"west", "gpt-4o", policy.Price{InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000, CachedInputPerMTok: 2_500_000, CacheWritePerMTok: 2_500_000, CacheWrite1hPerMTok: 2_500_000}, 0, 0},
	}
	for i, tt := range tests {
		d := m.Deployments[i]
		if d.Provider.Name != tt.provider || d.Upstream != tt.upstream || d.Price != tt.price || d.Weight != tt.weight || d.TokensPerMinute != tt.tpm {
			t.Errorf("deployment %d = %s/%s price %+v weight %d tpm %d; want %+v", i, d.Provider.Name, d.Upstream, d.Price, d.Weight, d.TokensPerMinute, tt)
		}
		if d.ContextWindow != 128000 || d.MaxOutputTokens != 16384 || d.Balance != policy.BalanceLeastInFlight ||
			len(d.Fallback) != 1 || d.Fallback[0] != p.Model("small") || len(d.Deployments) != 3 || d.Limited() != (tt.tpm > 0) {
			t.Errorf("deployment %d does not share the model's fields: %+v", i, d)
		}
	}
	if s := p.Model("small"); len(s.Deployments) != 1 || s.Balance != policy.BalanceWeighted || s.Weight != 1 {
		t.Errorf("a model of one deployment: %+v", s)
	}
}
