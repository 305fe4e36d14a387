package main

import (
	"fmt"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/router"
	"github.com/switchyard/switchyard/filters/router/complexity"
)

// twoModels is the policy the benchmark routes with: the production
// router's cost-optimized strategy choosing between a strong and a weak
// model priced as RouteLLM's pair, with the complexity threshold at t.
// With two models, "medium" and "complex" both ask for the stronger one, so
// a prompt goes to the strong model exactly when its score is at least t.
func twoModels(t float64) (*policy.Policy, error) {
	t = min(max(t, 1e-6), 1-2e-6)
	return twoModelPolicy(fmt.Sprintf("complexity: {medium_at: %.9f, complex_at: %.9f}", t, t+(1-t)/2))
}

// twoModelPolicy is the benchmark's policy with the given routing
// settings (YAML flow mappings after the strategy: thresholds, an auto
// target, learning).
func twoModelPolicy(routing string) (*policy.Policy, error) {
	if routing != "" {
		routing = ", " + routing
	}
	src := fmt.Sprintf(`
providers: [{name: p, kind: openai, base_url: "http://127.0.0.1:1"}]
models:
  - {name: strong, provider: p, context_window: 1000000, max_output_tokens: 4096, quality: 0.9, price_usd_per_mtok: {input: %[1]g, output: %[1]g}}
  - {name: weak, provider: p, context_window: 1000000, max_output_tokens: 4096, quality: 0.5, price_usd_per_mtok: {input: %[2]g, output: %[2]g}}
routes:
  - name: chat
    path: /v1/chat/completions
    api: chat_completions
    attempts: 1
    routing: {strategy: cost-optimized%s}
`, StrongUSDPerMTok, WeakUSDPerMTok, routing)
	return policy.Compile([]policy.File{{Name: "bench-routing.yaml", Data: []byte(src)}})
}

// routed is what the production router decided for every prompt.
type routed struct {
	Strong []bool
	Times  []time.Duration
}

// routeAll routes every prompt with the real router (policy, strategy,
// classifier with model m) at threshold t, timing each decision.
func routeAll(prompts []string, t float64, m *complexity.Model) (routed, error) {
	p, err := twoModels(t)
	if err != nil {
		return routed{}, err
	}
	r, err := router.NewRouter(p, p.Routes[0], nil, nil, router.WithComplexityModel(m))
	if err != nil {
		return routed{}, err
	}
	out := routed{Strong: make([]bool, len(prompts)), Times: make([]time.Duration, len(prompts))}
	for i, prompt := range prompts {
		req := &openaiapi.ChatRequest{Model: "auto", Messages: []openaiapi.Message{{Role: "user", Content: openaiapi.Content{Text: prompt}}}}
		start := time.Now()
		d, e := r.Decide(&router.Query{Chat: req})
		out.Times[i] = time.Since(start)
		if e != nil {
			return routed{}, fmt.Errorf("routing prompt %d: %v", i, e)
		}
		out.Strong[i] = d.Plan[0].Name == "strong"
	}
	return out, nil
}
