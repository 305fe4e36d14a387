package router

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/bench/cputime"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/router/routertest"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/sticky"
	"github.com/switchyard/switchyard/state/store"
)

// withSystem is a chat request for auto routing under a system prompt.
func withSystem(system, text string) *openaiapi.ChatRequest {
	return &openaiapi.ChatRequest{Model: "auto", Messages: []openaiapi.Message{
		{Role: "system", Content: openaiapi.Content{Text: system}},
		{Role: "user", Content: openaiapi.Content{Text: text}},
	}}
}

// TestLearningTradesStrongCalls: on an auto route that learns, two apps
// of one tenant send the same prompts; once the judge's verdicts say one
// app's weak answers fail and the other's hold, the first gets most of
// the strong calls and the second few, while the tenant's share stays
// the one asked. A client that names a model is never counted.
func TestLearningTradesStrongCalls(t *testing.T) {
	ctx := context.Background()
	cal := calibration.New("r1", nil, nil, nil)
	learner := priors.New(store.NewMemory(store.Options{}), nil, nil)
	r, p := autoRouter(t, "{strong_share_max: 0.5, min_samples: 20}, learn: {}", WithCalibration(cal), WithPriors(learner))
	acme := p.Tenants[0]
	var prompts []string
	for i := range 400 {
		prompts = append(prompts, fmt.Sprintf("Question %d: %s explain %s", i, strings.Repeat("why does it hold ", i%11), strings.Repeat("step by step ", i%5)))
	}
	const lawApp, chatApp = "You are the contracts assistant of a law firm.", "You are the small-talk bot of a shop."
	route := func(system, app string, prompts []string) (share float64, last Decision) {
		strong := 0
		for _, text := range prompts {
			d, e := r.Decide(&Query{Chat: withSystem(system, text), Tenant: acme, App: app})
			if e != nil {
				t.Fatal(e)
			}
			if d.Plan[0].Name == "strong" {
				strong++
			}
			last = d
		}
		return float64(strong) / float64(len(prompts)), last
	}
	route(lawApp, "legal", prompts[:100])
	_, d := route(chatApp, "shop", prompts[:100])
	if d.Domain == nil || d.Domain.Key().App != "shop" {
		t.Fatalf("decision's domain %+v, want the shop app's", d.Domain)
	}
	law, shop := r.learn.domain(&Query{Chat: withSystem(lawApp, "x"), Tenant: acme, App: "legal"}), d.Domain
	for i := range 60 {
		learner.Rate("chat", "acme", "legal", law.Key().FP, 0.5, float64(i%2), "judge") // half the weak answers fail
		learner.Rate("chat", "acme", "shop", shop.Key().FP, 0.5, 1, "judge")
	}
	learner.Refresh(ctx)
	cal.Refresh(ctx, time.Minute)
	lawShare, ld := route(lawApp, "legal", prompts[100:])
	shopShare, _ := route(chatApp, "shop", prompts[100:])
	if lawShare < 0.75 || shopShare > 0.25 {
		t.Errorf("strong shares once learnt: legal %.3f (want > 0.75), shop %.3f (want < 0.25)", lawShare, shopShare)
	}
	cal.Refresh(ctx, time.Minute)
	if mean := (lawShare + shopShare) / 2; mean < 0.4 || mean > 0.6 {
		t.Errorf("the tenant's strong share %.3f, want the asked 0.5 ± 0.1", mean)
	}
	if !strings.Contains(ld.Reason, "domain prior +") {
		t.Errorf("route reason %q does not name the domain's prior", ld.Reason)
	}
	named, e := r.Decide(&Query{Chat: &openaiapi.ChatRequest{Model: "weak", Messages: withSystem(lawApp, "x").Messages}, Tenant: acme, App: "legal"})
	if e != nil || named.Domain != nil {
		t.Errorf("a named model: domain %v (%v), want none", named.Domain, e)
	}
}

// TestDomainsByApp: the domain is the tenant, the app and the system
// prompt; a request without one is its app's fallback domain.
func TestDomainsByApp(t *testing.T) {
	learner := priors.New(store.NewMemory(store.Options{}), nil, nil)
	r, p := autoRouter(t, "{strong_share_max: 0.5}, learn: {}", WithPriors(learner))
	acme, beta := p.Tenants[0], p.Tenants[1]
	parts := &openaiapi.ChatRequest{Model: "auto", Messages: []openaiapi.Message{
		{Role: "developer", Content: openaiapi.Content{IsParts: true, Parts: []openaiapi.Part{{Type: "text", Text: "You are "}, {Type: "text", Text: "a bot."}}}},
		{Role: "user", Content: openaiapi.Content{Text: "hi"}},
	}}
	tests := []struct {
		name   string
		a, b   *Query
		sameFP bool
		same   bool
	}{
		{"same app and prompt", &Query{Chat: withSystem("You are a bot.", "hi"), Tenant: acme, App: "web"}, &Query{Chat: withSystem("You are a bot.", "bye"), Tenant: acme, App: "web"}, true, true},
		{"text parts read as one prompt", &Query{Chat: withSystem("You are \na bot.", "hi"), Tenant: acme, App: "web"}, &Query{Chat: parts, Tenant: acme, App: "web"}, true, true},
		{"another app", &Query{Chat: withSystem("You are a bot.", "hi"), Tenant: acme, App: "web"}, &Query{Chat: withSystem("You are a bot.", "hi"), Tenant: acme, App: "cli"}, true, false},
		{"another tenant", &Query{Chat: withSystem("You are a bot.", "hi"), Tenant: acme, App: "web"}, &Query{Chat: withSystem("You are a bot.", "hi"), Tenant: beta, App: "web"}, true, false},
		{"another prompt", &Query{Chat: withSystem("You are a bot.", "hi"), Tenant: acme, App: "web"}, &Query{Chat: withSystem("You are a lawyer.", "hi"), Tenant: acme, App: "web"}, false, false},
		{"no prompt: the app's fallback", &Query{Chat: chat(t, userMsg("auto", "hi")), Tenant: acme, App: "web"}, &Query{Chat: chat(t, userMsg("auto", "bye")), Tenant: acme, App: "web"}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			da, db := r.learn.domain(tt.a), r.learn.domain(tt.b)
			if (da.Key().FP == db.Key().FP) != tt.sameFP || (da == db) != tt.same {
				t.Errorf("domains %+v and %+v: same fingerprint %v (want %v), same domain %v (want %v)", da.Key(), db.Key(), da.Key().FP == db.Key().FP, tt.sameFP, da == db, tt.same)
			}
		})
	}
	if fp := r.learn.domain(tests[len(tests)-1].a).Key().FP; fp != 0 {
		t.Errorf("no system prompt: fingerprint %x, want 0", fp)
	}
}

// BenchmarkDecideLearning is BenchmarkDecideCalibrated on a route that
// learns, with 10,000 domains of one tenant known: the decision
// fingerprints the request's system prompt (about 500 bytes), looks its
// domain up among them and shifts the score. Requests cycle over 1,000
// of the domains; "without" routes the same requests on the same route
// without learning, for the difference.
func BenchmarkDecideLearning(b *testing.B) {
	p, err := routertest.Policy(50, 20)
	if err != nil {
		b.Fatal(err)
	}
	tenant := &policy.Tenant{Name: "acme"}
	// Digits do not make domains: each team is named in letters.
	team := func(i int) string { return string([]byte{'a' + byte(i%26), 'a' + byte(i/26%26), 'a' + byte(i/676%26)}) }
	base := strings.Repeat("Follow the house style guide of the team. ", 10)
	queries := make([]*Query, 10_000)
	for i := range queries {
		queries[i] = &Query{Chat: withSystem("You are the assistant of team "+team(i)+". "+base, routertest.Prompt), Hash: 7, User: "u", Tenant: tenant, App: fmt.Sprintf("app%d", i%100), Header: func(string) string { return "" }}
	}
	for _, learn := range []bool{true, false} {
		route := *p.Routes[0]
		route.Routing.Auto = &policy.Auto{StrongShare: 0.4, Window: time.Hour, MinSamples: 10}
		cal := calibration.New("r1", nil, nil, nil)
		opts := []Option{WithCalibration(cal)}
		learner := priors.New(store.NewMemory(store.Options{}), nil, nil)
		name := "without"
		if learn {
			route.Routing.Learn = &policy.Learn{HalfLife: time.Hour, MaxDomains: 10_000, PriorWeight: policy.DefaultLearnPriorWeight, Explore: policy.DefaultLearnExplore}
			opts, name = append(opts, WithPriors(learner)), "learning"
		}
		r, err := NewRouter(p, &route, fakeHealth{}, sticky.New(1000, time.Now), opts...)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 1000 {
			cal.Observe(route.Name, tenant.Name, float64(i)/1000)
		}
		cal.Refresh(context.Background(), time.Minute)
		if learn {
			for i, q := range queries {
				d := r.learn.domain(q)
				d.Routed(i%2 == 0)
				learner.Rate(route.Name, tenant.Name, d.Key().App, d.Key().FP, 0.5, float64(i%3)/2, "judge")
			}
			learner.Refresh(context.Background())
			if rep := learner.Report(route.Name, tenant.Name); len(rep) != len(queries) {
				b.Fatalf("%d domains known, want %d", len(rep), len(queries))
			}
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cputime.Process()
			i := 0
			for b.Loop() {
				if _, err := r.Decide(queries[i%1000]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			// ns/op is wall time, which a busy shared machine stretches.
			b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
		})
		if learn {
			// The learning's own part: fingerprint, lookup, shift, count.
			b.Run("domain only", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					d := r.learn.domain(queries[i%1000])
					d.Routed(d.Shift() > 0)
					i++
				}
			})
		}
	}
}
