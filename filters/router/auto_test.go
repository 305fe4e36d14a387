package router

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/router/complexity"
	"github.com/switchyard/switchyard/filters/router/routertest"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/sticky"
)

const autoPolicy = `
providers: [{name: oa, kind: openai, base_url: "http://127.0.0.1:1"}]
models:
  - {name: strong, provider: oa, context_window: 100000, max_output_tokens: 4000, quality: 0.95, price_usd_per_mtok: {input: 10, output: 30}}
  - {name: weak, provider: oa, context_window: 100000, max_output_tokens: 4000, quality: 0.5, cheap: true, price_usd_per_mtok: {input: 0.1, output: 0.3}}
routes:
  - name: chat
    path: /v1/chat/completions
    api: chat_completions
    attempts: 1
    routing: {auto: %s}
tenants: [{name: acme}, {name: beta}]
`

func autoRouter(t testing.TB, auto string, opts ...Option) (*Router, *policy.Policy) {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(fmt.Sprintf(autoPolicy, auto))}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(p, p.Routes[0], nil, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r, p
}

// TestQualityTargetReadsTheShippedCurve: a quality target becomes the
// least strong share at which the held-out curve keeps it.
func TestQualityTargetReadsTheShippedCurve(t *testing.T) {
	curve, err := complexity.DefaultCurve()
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []float64{0.9, 0.95, 0.99} {
		r, _ := autoRouter(t, fmt.Sprintf("{quality_target: %g}", target))
		got, ok := r.StrongShare()
		if want := curve.ShareFor(target); !ok || got != want {
			t.Errorf("quality_target %g: strong share %v (%v), want %v", target, got, ok, want)
		}
		n := len(curve.Quality) - 1
		if i := int(got * float64(n)); curve.Quality[i] < target || (i > 0 && curve.Quality[i-1] >= target) {
			t.Errorf("quality_target %g: share %v is not the least that keeps it on the curve", target, got)
		}
	}
	if _, ok := testRouterShare(t); ok {
		t.Error("a route with fixed thresholds reports a strong share")
	}
}

func testRouterShare(t *testing.T) (float64, bool) {
	r, _ := testRouter(t, false, nil)
	return r.StrongShare()
}

// TestAutoRouteLearnsPerTenant: two tenants with very different traffic
// each get the asked strong share from their own distribution; before
// any traffic the shipped calibration (score ≥ 1 − share) applies.
func TestAutoRouteLearnsPerTenant(t *testing.T) {
	cal := calibration.New("r1", nil, nil, nil)
	r, p := autoRouter(t, "{strong_share_max: 0.5, min_samples: 20}", WithCalibration(cal))
	// Two domains of distinct prompts: short chat and long reasoning.
	var easy, hard []string
	for i := range 200 {
		easy = append(easy, fmt.Sprintf("hi %d, tell me a joke about %s", i, strings.Repeat("cats ", i%7)))
		hard = append(hard, fmt.Sprintf("Prove step by step that for every n ≥ %d the sum of the first n odd numbers equals n^2, then calculate the probability that %d random integers are coprime, and explain why each step holds. %s",
			i, i+2, strings.Repeat("Therefore, if the premise holds, derive the bound exactly. ", i%9)))
	}
	acme, beta := p.Tenants[0], p.Tenants[1]
	route := func(tenant *policy.Tenant, prompts []string) float64 { return strongShareOf(t, r, tenant, prompts) }
	route(acme, easy[:100])
	route(beta, hard[:100])
	cal.Refresh(context.Background(), time.Minute)
	for _, tc := range []struct {
		name    string
		tenant  *policy.Tenant
		prompts []string
	}{{"acme (chat)", acme, easy[100:]}, {"beta (reasoning)", beta, hard[100:]}} {
		if got := route(tc.tenant, tc.prompts); got < 0.4 || got > 0.6 {
			t.Errorf("%s: strong share %.3f, want 0.5 ± 0.1", tc.name, got)
		}
	}
}

// TestFeedbackMovesTheRoutersShare: on a route with routing.auto.adjust,
// bad ratings of weak answers send more of the same traffic to the strong
// model, up to the policy's max and no further.
func TestFeedbackMovesTheRoutersShare(t *testing.T) {
	cal := calibration.New("r1", nil, nil, nil)
	r, p := autoRouter(t, "{strong_share_max: 0.3, min_samples: 20, adjust: {min: 0.2, max: 0.6, quality_bar: 0.9}}", WithCalibration(cal))
	var prompts []string
	for i := range 400 {
		prompts = append(prompts, fmt.Sprintf("Question %d: %s explain %s", i, strings.Repeat("why does it hold ", i%11), strings.Repeat("step by step ", i%5)))
	}
	route := func(prompts []string) float64 { return strongShareOf(t, r, p.Tenants[0], prompts) }
	route(prompts[:200])
	cal.Refresh(context.Background(), time.Minute)
	before := route(prompts[200:])
	for range 100 {
		cal.Rate("chat", "", 0)
	}
	for range 60 {
		cal.Refresh(context.Background(), time.Minute)
	}
	if got := cal.Share("chat", "", 0.3); got != 0.6 {
		t.Fatalf("share after sustained bad ratings %g, want the max 0.6", got)
	}
	after := route(prompts[200:])
	if before > 0.4 || after < 0.5 || after > 0.7 {
		t.Errorf("strong share %.3f before bad ratings (asked 0.3), %.3f after (max 0.6)", before, after)
	}
}

// strongShareOf routes each prompt for tenant and returns the share whose
// first choice was the strong model.
func strongShareOf(t *testing.T, r *Router, tenant *policy.Tenant, prompts []string) float64 {
	t.Helper()
	strong := 0
	for _, text := range prompts {
		d, e := r.Decide(&Query{Chat: chat(t, userMsg("auto", text)), Tenant: tenant})
		if e != nil {
			t.Fatal(e)
		}
		if d.Plan[0].Name == "strong" {
			strong++
		}
	}
	return float64(strong) / float64(len(prompts))
}

// BenchmarkDecideCalibrated is BenchmarkDecide on an auto route whose
// thresholds are read from a calibration: the decision plus the two
// threshold lookups and the observation.
func BenchmarkDecideCalibrated(b *testing.B) {
	p, err := routertest.Policy(50, 20)
	if err != nil {
		b.Fatal(err)
	}
	route := *p.Routes[0]
	route.Routing.Auto = &policy.Auto{StrongShare: 0.4, Window: time.Hour, MinSamples: 10}
	cal := calibration.New("r1", nil, nil, nil)
	r, err := NewRouter(p, &route, fakeHealth{}, sticky.New(1000, time.Now), WithCalibration(cal))
	if err != nil {
		b.Fatal(err)
	}
	tenant := &policy.Tenant{Name: "acme"}
	for i := range 1000 {
		cal.Observe(route.Name, tenant.Name, float64(i)/1000)
	}
	cal.Refresh(context.Background(), time.Minute)
	q := &Query{Chat: chat(b, userMsg("auto", routertest.Prompt)), Hash: 7, User: "u", Tenant: tenant, Header: func(string) string { return "" }}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Decide(q); err != nil {
			b.Fatal(err)
		}
	}
}
