package policy_test

import (
	"fmt"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestHybridCompiles(t *testing.T) {
	t.Parallel()
	const base = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
models:
  - {name: m, provider: oa, context_window: 1000, max_output_tokens: 100, capabilities: [chat], price_usd_per_mtok: {input: 1, output: 1}}
  - {name: n, provider: oa, context_window: 1000, max_output_tokens: 100, capabilities: [chat], price_usd_per_mtok: {input: 1, output: 1}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, hybrid: %s}
`
	tests := []struct {
		name, hybrid, wantName string
		wantPick               policy.HybridPick
		wantJudge              string
	}{
		{name: "defaults", hybrid: "{models: [m, n], pick: first}", wantName: "hybrid", wantPick: policy.PickFirst},
		{name: "named, judged", hybrid: "{model: best-of, models: [n, m], pick: judge, judge: m}", wantName: "best-of", wantPick: policy.PickJudge, wantJudge: "m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(fmt.Sprintf(base, tt.hybrid))}})
			if err != nil {
				t.Fatal(err)
			}
			h := p.Routes[0].Hybrid
			judge := ""
			if h.Judge != nil {
				judge = h.Judge.Name
			}
			if h.Name != tt.wantName || h.Pick != tt.wantPick || judge != tt.wantJudge || len(h.Models) != 2 {
				t.Errorf("hybrid %+v", h)
			}
		})
	}
}
