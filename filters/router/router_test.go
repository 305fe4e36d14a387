package router

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/bench/cputime"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/router/routertest"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/sticky"
)

const testPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: an, kind: openai, base_url: "http://127.0.0.1:2"}
  - {name: local, kind: openai_compatible, base_url: "http://127.0.0.1:3"}
models:
  - {name: strong, provider: oa, context_window: 100000, max_output_tokens: 4000, capabilities: [chat, tools, vision, stream], quality: 0.95, price_usd_per_mtok: {input: 10, output: 30}, fallback: [mid]}
  - {name: mid, provider: an, context_window: 100000, max_output_tokens: 4000, capabilities: [chat, tools, stream], quality: 0.7, price_usd_per_mtok: {input: 1, output: 3}}
  - {name: cheap, provider: an, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, stream], quality: 0.4, cheap: true, price_usd_per_mtok: {input: 0.1, output: 0.3}}
  - {name: llama, provider: local, context_window: 32000, max_output_tokens: 2000, capabilities: [chat, tools, stream], quality: 0.5, self_hosted: true, price_usd_per_mtok: {input: 0, output: 0}}
routes:
  - name: chat
    path: /v1/chat/completions
    api: chat_completions
    attempts: 3
    routing:
      strategy: cost-optimized
      allow_override: %s
      fallback: [cheap]
      rules:
        - {name: pii, when: {sensitive: true}, route_to: [llama]}
        - {name: big, when: {token_count_above: 5000}, route_to: [strong, mid]}
        - {name: legal, when: {topic: [contract, lawsuit]}, route_to: [strong]}
        - {name: chinese, when: {language: [zh]}, route_to: [mid]}
        - {name: beta, when: {header: {X-Beta: "1"}}, route_to: [llama]}
        - {name: eu, when: {metadata: {region: eu}}, route_to: [mid]}
      tiers: {pro: [strong]}
tenants:
  - {name: free, tier: free}
  - {name: pro, tier: pro}
  - {name: narrow, models: [cheap, mid]}
  - {name: qf, routing: {strategy: quality-first}}
  - {name: lf, routing: {strategy: latency-first}}
`

func testRouter(t testing.TB, allowOverride bool, h Health) (*Router, *policy.Policy) {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(fmt.Sprintf(testPolicy, fmt.Sprint(allowOverride)))}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(p, p.Routes[0], h, sticky.New(100, time.Now))
	if err != nil {
		t.Fatal(err)
	}
	return r, p
}

func chat(t testing.TB, body string) *openaiapi.ChatRequest {
	t.Helper()
	r, err := openaiapi.ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func userMsg(model, text string) string {
	b := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, model, text)
	return b
}

// fakeHealth reports per-provider admissions, latencies and attempts
// under way.
type fakeHealth struct {
	down      map[string]string // provider → reason
	weight    map[string]float64
	latency   map[string]time.Duration
	inflight  map[string]int64
	noAddress map[string]string // provider → why its name resolved to no address
}

func (f fakeHealth) Admit(provider, _ string, _ uint64) health.Admission {
	if why, ok := f.down[provider]; ok {
		return health.Admission{Reason: why}
	}
	if w, ok := f.weight[provider]; ok {
		return health.Admission{Allowed: true, Weight: w, Reason: "degraded"}
	}
	return health.Admission{Allowed: true, Weight: 1, NoAddress: f.noAddress[provider]}
}
func (fakeHealth) Observe(health.Observation) {}
func (f fakeHealth) LatencyP95(provider, _ string, _ bool) (time.Duration, bool) {
	d, ok := f.latency[provider]
	return d, ok
}
func (fakeHealth) Begin(string, string) func()         { return func() {} }
func (f fakeHealth) InFlight(provider, _ string) int64 { return f.inflight[provider] }

func names(ms []*policy.Model) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.Name
	}
	return strings.Join(s, ",")
}

const hardPrompt = "Prove step by step that the sum of the first n odd numbers is n squared, then derive a closed form for the sum of the first n cubes, explain why each step holds, and compare both proofs. First outline the induction, then verify the base case, and finally generalise."

func TestDecide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		override   bool
		body       string
		tenant     string
		header     map[string]string
		health     fakeHealth
		pressure   Pressure
		wantPlan   string
		wantReason string
		wantStatus int
		wantCode   string
	}{
		{name: "named model keeps its own fallback list", body: userMsg("strong", "hi"), wantPlan: "strong,mid", wantReason: "model named by the client"},
		{name: "named model without own list uses the route fallback", body: userMsg("mid", "hi"), wantPlan: "mid,cheap"},
		{name: "unknown model", body: userMsg("gpt-9", "hi"), wantStatus: http.StatusNotFound, wantCode: "model_not_found"},
		{name: "tenant allowlist", body: userMsg("strong", "hi"), tenant: "narrow", wantStatus: http.StatusForbidden, wantCode: "model_not_allowed"},
		{name: "named model lacking vision", body: `{"model":"mid","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, wantStatus: http.StatusBadRequest, wantCode: "unsupported_capability"},
		{name: "auto simple goes cheapest", body: userMsg("auto", "hi there"), wantPlan: "llama,cheap,mid", wantReason: "strategy cost-optimized"},
		{name: "auto complex goes strongest", body: userMsg("auto", hardPrompt), wantPlan: "strong,mid,llama"},
		{name: "auto with tools leaves out the model without tools", body: `{"model":"auto","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`, wantPlan: "llama,mid,strong"},
		{name: "context window excludes the small model", body: userMsg("auto", strings.Repeat("word ", 8000)), wantPlan: "strong,mid", wantReason: "rule big"},
		{name: "topic rule", body: userMsg("auto", "Review this contract clause"), wantPlan: "strong,cheap", wantReason: "rule legal"},
		{name: "language rule", body: userMsg("auto", "请解释一下量子计算的基本原理"), wantPlan: "mid,cheap", wantReason: "rule chinese"},
		{name: "header rule", body: userMsg("auto", "hi"), header: map[string]string{"x-beta": "1"}, wantPlan: "llama,cheap", wantReason: "rule beta"},
		{name: "metadata rule", body: `{"model":"auto","metadata":{"region":"eu"},"messages":[{"role":"user","content":"hi"}]}`, wantPlan: "mid,cheap", wantReason: "rule eu"},
		{name: "sensitive auto goes self-hosted only", body: userMsg("auto", "my card is 4111 1111 1111 1111"), wantPlan: "llama", wantReason: "rule pii"},
		{name: "sensitive with a named third-party model is refused", body: userMsg("strong", "mail me at ana@example.com"), wantStatus: http.StatusBadRequest, wantCode: "sensitive_content"},
		{name: "sensitive with a named model is rerouted when override is allowed", override: true, body: userMsg("strong", "mail me at ana@example.com"), wantPlan: "llama", wantReason: "rule pii"},
		{name: "override lets a rule replace a named model", override: true, body: userMsg("cheap", "请解释一下量子计算的基本原理"), wantPlan: "mid,cheap", wantReason: "rule chinese"},
		{name: "no override keeps the named model despite a rule", body: userMsg("cheap", "请解释一下量子计算的基本原理"), wantPlan: "cheap", wantReason: "model named by the client"},
		{name: "pro tier prefers the flagship", tenant: "pro", body: userMsg("auto", "hi"), wantPlan: "strong,llama,cheap", wantReason: "tier pro"},
		{name: "tenant strategy override: quality-first", tenant: "qf", body: userMsg("auto", "hi"), wantPlan: "strong,mid,llama", wantReason: "strategy quality-first"},
		{name: "latency-first uses observed p95", tenant: "lf", body: userMsg("auto", "hi"), health: fakeHealth{latency: map[string]time.Duration{"oa": 100 * time.Millisecond, "an": 900 * time.Millisecond, "local": 3 * time.Second}}, wantPlan: "strong,cheap,mid", wantReason: "strategy latency-first"},
		{name: "unavailable provider skipped with its reason", body: userMsg("strong", "hi"), health: fakeHealth{down: map[string]string{"oa": "breaker open"}}, wantPlan: "mid", wantReason: "skipped strong (breaker open)"},
		{name: "degraded provider demoted", body: userMsg("auto", "hi"), health: fakeHealth{weight: map[string]float64{"local": 0.5}}, wantPlan: "cheap,mid,strong"},
		{name: "everything down", body: userMsg("mid", "hi"), health: fakeHealth{down: map[string]string{"an": "unavailable"}}, wantStatus: http.StatusServiceUnavailable, wantCode: "no_model_available"},
		{name: "budget pressure: cheap models only", pressure: PressureCheapOnly, body: userMsg("auto", hardPrompt), wantPlan: "cheap"},
		{name: "budget pressure at 80%: the cheap model overtakes the dearer ones", pressure: PressureHigh, body: userMsg("auto", hardPrompt), wantPlan: "strong,cheap,mid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, p := testRouter(t, tt.override, tt.health)
			q := &Query{Chat: chat(t, tt.body), Hash: 42, Pressure: tt.pressure, Header: func(k string) string { return tt.header[k] }}
			for _, tn := range p.Tenants {
				if tn.Name == tt.tenant {
					q.Tenant = tn
				}
			}
			d, err := r.Decide(q)
			if tt.wantStatus != 0 {
				if err == nil || err.Status != tt.wantStatus || err.Code != tt.wantCode {
					t.Fatalf("got %v (plan %s), want %d %s", err, names(d.Plan), tt.wantStatus, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected refusal: %v", err)
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

func TestStickiness(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	p, _ := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(fmt.Sprintf(testPolicy, "false"))}})
	users := sticky.New(10, clock)
	r, err := NewRouter(p, p.Routes[0], nil, users)
	if err != nil {
		t.Fatal(err)
	}
	q := &Query{Chat: chat(t, userMsg("auto", "hi")), User: "u1"}
	d, _ := r.Decide(q)
	if d.Plan[0].Name != "llama" {
		t.Fatalf("first choice %s", d.Plan[0].Name)
	}
	users.Set("chat", "", "u1", "mid", 5*time.Minute)
	d, _ = r.Decide(q)
	if d.Plan[0].Name != "mid" || !strings.Contains(d.Reason, "sticky") {
		t.Errorf("sticky user got %s (%s), want mid", d.Plan[0].Name, d.Reason)
	}
	now = now.Add(6 * time.Minute)
	d, _ = r.Decide(q)
	if d.Plan[0].Name != "llama" {
		t.Errorf("after the cooldown got %s, want the strategy's llama", d.Plan[0].Name)
	}
	// An unavailable sticky model does not hold the user.
	users.Set("chat", "", "u1", "mid", 5*time.Minute)
	r.health = fakeHealth{down: map[string]string{"an": "unavailable"}}
	d, _ = r.Decide(q)
	if d.Plan[0].Name == "mid" {
		t.Error("an unavailable sticky model was kept")
	}
}

func TestSplitShareIsStickyPerUser(t *testing.T) {
	t.Parallel()
	src := strings.Replace(fmt.Sprintf(testPolicy, "false"), "tiers: {pro: [strong]}", "tiers: {pro: [strong]}\n      split: {model: mid, percent: 20}", 1)
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := NewRouter(p, p.Routes[0], nil, nil)
	in := 0
	const users = 5000
	for i := range users {
		q := &Query{Chat: chat(t, userMsg("auto", "hi")), User: fmt.Sprintf("user-%d", i)}
		d, _ := r.Decide(q)
		again, _ := r.Decide(q)
		if d.Split != again.Split {
			t.Fatalf("user %d changed arm", i)
		}
		if d.Split == "mid" {
			in++
			if d.Plan[0].Name != "mid" {
				t.Fatalf("split arm not first: %s", names(d.Plan))
			}
		}
	}
	if share := float64(in) / users; share < 0.17 || share > 0.23 {
		t.Errorf("split share = %.3f, want about 0.20", share)
	}
}

// BenchmarkDecide measures one routing decision with 50 models and 20
// rules, none of which match, so every rule is evaluated.
func BenchmarkDecide(b *testing.B) {
	p, err := routertest.Policy(50, 20)
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRouter(p, p.Routes[0], fakeHealth{}, sticky.New(1000, time.Now))
	if err != nil {
		b.Fatal(err)
	}
	q := &Query{Chat: chat(b, userMsg("auto", routertest.Prompt)), Hash: 7, User: "u", Header: func(string) string { return "" }}
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		if _, err := r.Decide(q); err != nil {
			b.Fatal(err)
		}
	}
	// ns/op is wall time, which a busy shared machine stretches.
	b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
}
