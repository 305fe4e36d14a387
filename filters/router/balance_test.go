package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/health"
)

const deploymentsPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: east, kind: azure_openai, base_url: "http://127.0.0.1:2", api_version: "2024-10-21"}
  - {name: west, kind: azure_openai, base_url: "http://127.0.0.1:3", api_version: "2024-10-21"}
  - {name: an, kind: anthropic, base_url: "http://127.0.0.1:4"}
models:
  - {name: w, provider: oa, weight: 3, context_window: 100000, max_output_tokens: 4000, price_usd_per_mtok: {input: 2, output: 8}, fallback: [mid]}
  - {name: w, provider: east, price_usd_per_mtok: {input: 4, output: 16}}
  - {name: w, provider: west, weight: 0}
  - {name: lif, provider: oa, balance: least_in_flight, context_window: 100000, max_output_tokens: 4000, price_usd_per_mtok: {input: 1, output: 1}}
  - {name: lif, provider: east}
  - {name: hb, provider: oa, balance: health, context_window: 100000, max_output_tokens: 4000, price_usd_per_mtok: {input: 1, output: 1}}
  - {name: hb, provider: east}
  - {name: mid, provider: an, context_window: 100000, max_output_tokens: 4000, price_usd_per_mtok: {input: 1, output: 3}}
  - {name: emb, provider: oa, context_window: 8000, capabilities: [embeddings], price_usd_per_mtok: {input: 0.1, output: 0}}
  - {name: emb, provider: east}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, attempts: 4}
`

func deploymentsRouter(t *testing.T, h Health, attempts int) (*Router, *policy.Policy) {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(deploymentsPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	rt := *p.Routes[0]
	rt.Attempts = attempts
	r, err := NewRouter(p, &rt, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, p
}

// planOf names a plan's deployments as provider/model.
func planOf(ms []*policy.Model) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.Provider.Name + "/" + m.Name
	}
	return strings.Join(s, ",")
}

// TestDeploymentsInThePlan: a model named by the client expands into its
// deployments, balanced as the model says, before its fallback; an
// unavailable deployment is skipped and its siblings serve.
func TestDeploymentsInThePlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		model    string
		health   fakeHealth
		attempts int
		// want are the plans seen over many requests, each at least once.
		want   []string
		reason string
	}{
		{name: "weighted: either weighted deployment first, the standby last, then the fallback", model: "w", attempts: 4,
			want: []string{"oa/w,east/w,west/w,an/mid", "east/w,oa/w,west/w,an/mid"}},
		{name: "the route's attempts cut the plan before the fallback", model: "w", attempts: 2,
			want: []string{"oa/w,east/w", "east/w,oa/w"}},
		{name: "an unavailable deployment is skipped, its siblings serve first", model: "w", attempts: 4,
			health: fakeHealth{down: map[string]string{"oa": "breaker open"}},
			want:   []string{"east/w,west/w,an/mid"}, reason: "skipped oa/w (breaker open)"},
		{name: "every weighted deployment down: the standby serves before the fallback", model: "w", attempts: 4,
			health: fakeHealth{down: map[string]string{"oa": "drill", "east": "drill"}},
			want:   []string{"west/w,an/mid"}},
		{name: "least in flight goes first", model: "lif", attempts: 4,
			health: fakeHealth{inflight: map[string]int64{"oa": 5, "east": 1}},
			want:   []string{"east/lif,oa/lif"}},
		{name: "least in flight, the other way", model: "lif", attempts: 4,
			health: fakeHealth{inflight: map[string]int64{"east": 2}},
			want:   []string{"oa/lif,east/lif"}},
		{name: "least in flight, a tie drawn by weight", model: "lif", attempts: 4,
			want: []string{"oa/lif,east/lif", "east/lif,oa/lif"}},
		{name: "health: the healthy deployment before the degraded one", model: "hb", attempts: 4,
			health: fakeHealth{weight: map[string]float64{"oa": 0.5}},
			want:   []string{"east/hb,oa/hb"}},
		{name: "health: among healthy ones, the faster first", model: "hb", attempts: 4,
			health: fakeHealth{latency: map[string]time.Duration{"oa": 300 * time.Millisecond, "east": 900 * time.Millisecond}},
			want:   []string{"oa/hb,east/hb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := deploymentsRouter(t, tt.health, tt.attempts)
			seen := map[string]int{}
			for key := range uint64(200) {
				d, e := r.Decide(&Query{Chat: chat(t, userMsg(tt.model, "hi")), Hash: HashID(fmt.Sprint(key))})
				if e != nil {
					t.Fatal(e)
				}
				seen[planOf(d.Plan)]++
				if !strings.Contains(d.Reason, tt.reason) {
					t.Errorf("reason %q lacks %q", d.Reason, tt.reason)
				}
			}
			for _, w := range tt.want {
				if seen[w] == 0 {
					t.Errorf("plan %s never made; made %v", w, seen)
				}
				delete(seen, w)
			}
			if len(seen) > 0 {
				t.Errorf("unexpected plans %v", seen)
			}
		})
	}
}

// TestWeightsSplitTraffic: over many requests each deployment comes first
// in proportion to its weight, times its health weight when degraded.
func TestWeightsSplitTraffic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		health fakeHealth
		want   float64 // share of oa/w first
	}{
		{"weights 3:1", fakeHealth{}, 0.75},
		{"oa degraded to half: 1.5:1", fakeHealth{weight: map[string]float64{"oa": 0.5}}, 0.6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := deploymentsRouter(t, tt.health, 4)
			const n = 4000
			oa := 0
			for key := range uint64(n) {
				d, e := r.Decide(&Query{Chat: chat(t, userMsg("w", "hi")), Hash: HashID(fmt.Sprint("request ", key))})
				if e != nil {
					t.Fatal(e)
				}
				switch d.Plan[0].Provider.Name {
				case "oa":
					oa++
				case "east":
				default:
					t.Fatalf("the standby came first: %s", planOf(d.Plan))
				}
			}
			// Four standard deviations of a binomial share: a correct draw
			// fails this about once in 30,000 runs, and the keys are fixed.
			share, sd := float64(oa)/n, math.Sqrt(tt.want*(1-tt.want)/n)
			if math.Abs(share-tt.want) > 4*sd {
				t.Errorf("oa first in %.3f of requests, want %.2f ± %.3f", share, tt.want, 4*sd)
			}
		})
	}
}

// TestRankingSeesTheWholeModel: the strategies rank a model by its
// deployments together: its healthiest (one deployment down does not
// demote it) and its price averaged by weight.
func TestRankingSeesTheWholeModel(t *testing.T) {
	t.Parallel()
	r, p := deploymentsRouter(t, fakeHealth{down: map[string]string{"oa": "breaker open"}}, 4)
	w := p.Model("w")
	if got := r.healthWeight(w, 1); got != 1 {
		t.Errorf("health weight %v with east healthy, want 1", got)
	}
	// oa (weight 3) at 3.5 a typical MTok, east (weight 1) at 7; the
	// standby does not count.
	if got, want := pricePerMTok(w), (3*3.5e6+7e6)/4; got != want {
		t.Errorf("price %v, want %v", got, want)
	}
	if got, want := pricePerMTok(p.Model("mid")), 1.5e6; got != want {
		t.Errorf("single deployment price %v, want %v", got, want)
	}
}

// TestEmbeddingsFailOverAcrossDeployments: an embeddings request keeps to
// the model it named, but its deployments back each other up: a down one
// is skipped, and only when every one is down is the request refused.
func TestEmbeddingsFailOverAcrossDeployments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		down     map[string]string
		want     string
		wantCode string
	}{
		{"one deployment down", map[string]string{"oa": "drill"}, "east/emb", ""},
		{"every deployment down", map[string]string{"oa": "drill", "east": "breaker open"}, "", "no_model_available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := fakeHealth{down: tt.down}
			r, p := deploymentsRouter(t, h, 4)
			f := &Filter{router: r, health: h, log: slog.New(slog.DiscardHandler)}
			x := &filters.Exchange{ID: "rid", Policy: p, Route: r.route, Embeddings: &openaiapi.EmbeddingsRequest{Model: "emb"}}
			err := f.RequestBody(context.Background(), x)
			var e *openaiapi.Error
			if errors.As(err, &e) != (tt.wantCode != "") || (e != nil && e.Code != tt.wantCode) {
				t.Fatalf("err %v, want code %q", err, tt.wantCode)
			}
			plan := make([]*policy.Model, len(x.Plan))
			for i, t := range x.Plan {
				plan[i] = t.Model
			}
			if planOf(plan) != tt.want {
				t.Errorf("plan %s, want %s", planOf(plan), tt.want)
			}
		})
	}
}

// TestAttemptsInFlight: an attempt counts as under way on its deployment
// from its start until it fails or the request ends, on the real
// monitor the least_in_flight balance reads.
func TestAttemptsInFlight(t *testing.T) {
	t.Parallel()
	mon, err := health.New(policy.DefaultHealthConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, p := deploymentsRouter(t, mon, 4)
	f := &Filter{router: r, health: mon, log: slog.New(slog.DiscardHandler)}
	x := &filters.Exchange{ID: "rid", Policy: p, Route: r.route, Chat: chat(t, userMsg("lif", "hi"))}
	if err := f.RequestBody(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	inflight := func() string {
		return fmt.Sprintf("oa %d, east %d", mon.InFlight("oa", "lif"), mon.InFlight("east", "lif"))
	}
	first, _ := x.NewAttempt(1, time.Now())
	if err := f.Attempt(context.Background(), x, first); err != nil {
		t.Fatal(err)
	}
	one := first.Target.Provider().Name
	if got := mon.InFlight(one, "lif"); got != 1 {
		t.Fatalf("after the first attempt began: %s", inflight())
	}
	first.Finish(filters.Outcome{Status: 503})
	f.AttemptDone(context.Background(), x, first)
	second, _ := x.NewAttempt(2, time.Now())
	if err := f.Attempt(context.Background(), x, second); err != nil {
		t.Fatal(err)
	}
	second.Finish(filters.Outcome{Status: 200})
	f.AttemptDone(context.Background(), x, second)
	if second.Target.Provider().Name == one || mon.InFlight(one, "lif") != 0 || mon.InFlight(second.Target.Provider().Name, "lif") != 1 {
		t.Fatalf("after the first failed and the second answered: %s", inflight())
	}
	f.Done(context.Background(), x, nil)
	f.Done(context.Background(), x, nil)
	if mon.InFlight("oa", "lif") != 0 || mon.InFlight("east", "lif") != 0 {
		t.Fatalf("after the request ended: %s", inflight())
	}
}
