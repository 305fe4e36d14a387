package router

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/sticky"
)

// rulesPolicy has a weighted route (weights all on cost) with the
// capability and complexity rules, and tenants with their own weights.
const rulesPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: an, kind: openai, base_url: "http://127.0.0.1:2"}
  - {name: local, kind: openai_compatible, base_url: "http://127.0.0.1:3"}
models:
  - {name: strong, provider: oa, context_window: 100000, max_output_tokens: 4000, capabilities: [chat, tools, vision, stream], quality: 0.95, price_usd_per_mtok: {input: 10, output: 30}}
  - {name: mid, provider: an, context_window: 100000, max_output_tokens: 4000, capabilities: [chat, tools, stream], quality: 0.7, price_usd_per_mtok: {input: 1, output: 3}}
  - {name: cheap, provider: an, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, stream], quality: 0.4, cheap: true, price_usd_per_mtok: {input: 0.1, output: 0.3}}
  - {name: llama, provider: local, context_window: 32000, max_output_tokens: 2000, capabilities: [chat, tools, stream], quality: 0.5, self_hosted: true, price_usd_per_mtok: {input: 0, output: 0}}
routes:
  - name: chat
    path: /v1/chat/completions
    api: chat_completions
    attempts: 4
    routing:
      strategy: weighted
      weights: {cost: 1}
      rules:
        - {name: seeing, when: {requires_vision: true}, route_to: [strong]}
        - {name: hard, when: {complexity: [complex]}, route_to: [strong, mid]}
        - {name: tooling, when: {requires_tool: true}, route_to: [mid, llama]}
tenants:
  - {name: plain}
  - {name: picky, routing: {weights: {quality: 1}}}
  - {name: hurried, routing: {weights: {latency: 1}}}
  - {name: loyal, routing: {weights: {cost: 0.2, consistency: 1}}}
  - {name: careful, routing: {strategy: weighted, weights: {health: 1, quality: 0.1}}}
`

// TestWeightsAndRules: the weighted strategy ranks by the route's weights
// or the tenant's own; the requires_vision, complexity and requires_tool
// rules pick their models (the first that matches wins), which the
// strategy then ranks; and the
// governor's first level (80% of the hour's slot) halves the score of
// every model not marked cheap, so cheap ones move up for "model": "auto".
func TestWeightsAndRules(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(rulesPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	tools := `{"model":"auto","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`
	image := `{"model":"auto","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`
	imageAndTools := `{"model":"auto","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`
	tests := []struct {
		name       string
		tenant     string
		body       string
		health     fakeHealth
		pressure   Pressure
		sticky     string // the model the user was last served by
		wantPlan   string
		wantReason string
	}{
		{name: "route weights: all on cost, cheapest first", tenant: "plain", body: userMsg("auto", "hi"), wantPlan: "llama,cheap,mid,strong", wantReason: "strategy weighted"},
		{name: "tenant weights: all on quality", tenant: "picky", body: userMsg("auto", "hi"), wantPlan: "strong,mid,llama,cheap", wantReason: "strategy weighted"},
		{name: "tenant weights: all on latency, from observed p95", tenant: "hurried", body: userMsg("auto", "hi"),
			health: fakeHealth{latency: map[string]time.Duration{"oa": 3 * time.Second, "an": 200 * time.Millisecond, "local": time.Second}}, wantPlan: "mid,cheap,llama,strong"},
		{name: "tenant weights: consistency keeps the user's last model", tenant: "loyal", body: userMsg("auto", "hi"), sticky: "strong", wantPlan: "strong,llama,cheap,mid"},
		{name: "tenant weights: health puts the degraded provider last", tenant: "careful", body: userMsg("auto", "hi"),
			health: fakeHealth{weight: map[string]float64{"oa": 0.2}}, wantPlan: "mid,llama,cheap,strong"},
		{name: "requires_vision", tenant: "plain", body: image, wantPlan: "strong", wantReason: "rule seeing"},
		{name: "the first matching rule wins", tenant: "plain", body: imageAndTools, wantPlan: "strong", wantReason: "rule seeing"},
		// A rule's models are ranked by the strategy too: the route's
		// weights are all on cost.
		{name: "complexity", tenant: "plain", body: userMsg("auto", hardPrompt), wantPlan: "mid,strong", wantReason: "rule hard"},
		{name: "complexity, ranked by the tenant's weights", tenant: "picky", body: userMsg("auto", hardPrompt), wantPlan: "strong,mid", wantReason: "rule hard"},
		{name: "requires_tool", tenant: "plain", body: tools, wantPlan: "llama,mid", wantReason: "rule tooling"},
		{name: "a simple prompt without tools matches no rule", tenant: "picky", body: userMsg("auto", "hello"), wantPlan: "strong,mid,llama,cheap"},
		{name: "governor at 80%: models not marked cheap lose half their score", tenant: "picky", body: userMsg("auto", "hi"), pressure: PressureHigh,
			wantPlan: "strong,cheap,mid,llama"},
		{name: "governor at 95%: cheap models only", tenant: "picky", body: userMsg("auto", "hi"), pressure: PressureCheapOnly, wantPlan: "cheap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			users := sticky.New(100, time.Now)
			r, err := NewRouter(p, p.Routes[0], tt.health, users)
			if err != nil {
				t.Fatal(err)
			}
			q := &Query{Chat: chat(t, tt.body), Hash: 42, Pressure: tt.pressure, Header: func(string) string { return "" }}
			for _, tn := range p.Tenants {
				if tn.Name == tt.tenant {
					q.Tenant = tn
				}
			}
			if tt.sticky != "" {
				q.User = "u1"
				users.Set(p.Routes[0].Name, tt.tenant, "u1", tt.sticky, time.Hour)
			}
			d, rerr := r.Decide(q)
			if rerr != nil {
				t.Fatalf("refused: %v", rerr)
			}
			if got := names(d.Plan); got != tt.wantPlan {
				t.Errorf("plan = %s, want %s (reason %q, ranked %v)", got, tt.wantPlan, d.Reason, d.Ranked)
			}
			if !strings.Contains(d.Reason, tt.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", d.Reason, tt.wantReason)
			}
		})
	}
}
