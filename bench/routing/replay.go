package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/bench/routing/routellm"
	"github.com/switchyard/switchyard/bench/routing/sweep"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/router"
	"github.com/switchyard/switchyard/filters/router/complexity"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/store"
)

// A replay is a benchmark sent as one tenant's traffic, in time order,
// through the production router on a route that learns domain priors
// (routing.learn), while a simulated judge grades a share of the answers
// the weak model gave. The apps are the benchmark's groups: MMLU's 57
// subjects and MT-Bench's 8 categories each send their prompts under a
// system prompt of their own; GSM8K is one app. The learning sees the
// outcomes only through the judge's verdicts.

// replayTenant is the tenant every replayed request comes from.
const replayTenant = "bench"

// replayPeriod is the simulated time between two requests, and
// replayRefresh how many requests pass between two refreshes of the
// priors and the calibration (the gateway refreshes every few seconds).
const (
	replayPeriod  = time.Second
	replayRefresh = 10
)

// replayApp is an app of a replay.
type replayApp struct{ Name, System string }

// mtBenchApps are MT-Bench's categories as apps.
var mtBenchApps = map[string]string{
	"writing":    "You are the writing assistant of a publishing tool. Help the user write and edit their texts.",
	"roleplay":   "You are the character engine of an interactive story app. Stay in the role the user gives you.",
	"reasoning":  "You are the puzzle companion of a brain-training app. Work out the user's riddles and logic questions.",
	"math":       "You are the math helper of a homework app. Solve the user's problems and show the result.",
	"coding":     "You are the coding assistant of a developer tool. Write and explain code for the user.",
	"extraction": "You are the data-extraction service of a document pipeline. Pull the requested facts out of the given text.",
	"stem":       "You are the science explainer of an education app. Answer the user's questions on science and engineering.",
	"humanities": "You are the humanities tutor of an education app. Discuss history, philosophy, economics and the arts with the user.",
}

// replayApps gives each item of set its app: one per MMLU subject, one
// per MT-Bench category, one for a benchmark without groups.
func replayApps(set routellm.Set) (apps []replayApp, appOf []int) {
	index := map[string]int{}
	appOf = make([]int, len(set.Items))
	for i, it := range set.Items {
		j, ok := index[it.Group]
		if !ok {
			j = len(apps)
			index[it.Group] = j
			apps = append(apps, replayApp{Name: appName(set.Name, it.Group), System: systemPrompt(set.Name, it.Group)})
		}
		appOf[i] = j
	}
	return apps, appOf
}

func appName(bench, group string) string {
	if group == "" {
		return strings.ToLower(bench)
	}
	return strings.ReplaceAll(group, "_", "-")
}

func systemPrompt(bench, group string) string {
	switch {
	case bench == routellm.MTBench:
		if s, ok := mtBenchApps[group]; ok {
			return s
		}
		return "You are the " + group + " assistant of a chat app."
	case group == "":
		return "You are the tutor of a math homework app. Solve the word problem and give the final number."
	}
	return "You are the " + strings.ReplaceAll(group, "_", " ") + " tutor of an exam-preparation app. Read the multiple-choice question and answer with the letter of the correct option."
}

// replayRun says how a replay routes and grades.
type replayRun struct {
	// Routing is the route's routing settings after the strategy.
	Routing string
	// Judge is the share of the requests the simulated judge draws.
	Judge float64
}

// Routings of the replays: the shipped default thresholds (medium_at
// 0.4) and an auto route holding a quality target of 95 %, each
// learning with the shipped defaults.
const (
	routingDefault = "learn: {}"
	routingAuto    = "auto: {quality_target: 0.95}, learn: {}"
	// routingAutoAlone is the auto route without learning, for comparison.
	routingAutoAlone = "auto: {quality_target: 0.95}"
)

// replayed is what a replay routed, request by request in time order.
type replayed struct {
	// Raw is the classifier's score, Ranked the score the router ranked
	// by (Raw shifted by the domain's prior at that time).
	Raw, Ranked []float64
	Strong      []bool
	Outcomes    []sweep.Outcome
	// Verdicts is the judge's, Bought the strong answers the learning's
	// exploration bought for them.
	Verdicts, Bought int
}

// replayer routes replays of one benchmark.
type replayer struct {
	set      routellm.Set
	apps     []replayApp
	appOf    []int
	model    *complexity.Model
	scale    float64 // the quality scale: a verdict is 1 − shortfall/scale
	requests []*openaiapi.ChatRequest
}

func newReplayer(set routellm.Set, m *complexity.Model) *replayer {
	r := &replayer{set: set, model: m, scale: 1}
	r.apps, r.appOf = replayApps(set)
	if set.Name == routellm.MTBench {
		r.scale = 9 // judge scores run 1–10
	}
	r.requests = make([]*openaiapi.ChatRequest, len(set.Items))
	for i, it := range set.Items {
		r.requests[i] = &openaiapi.ChatRequest{Model: "auto", Messages: []openaiapi.Message{
			{Role: "system", Content: openaiapi.Content{Text: r.apps[r.appOf[i]].System}},
			{Role: "user", Content: openaiapi.Content{Text: it.Prompt}},
		}}
	}
	return r
}

// verdict is the simulated judge's grade of the weak model's answer to
// item i against the strong model's: 1 when it is as good, less by the
// strong model's lead.
func (r *replayer) verdict(i int) float64 {
	it := r.set.Items[i]
	return 1 - max(0, it.Strong-it.Weak)/r.scale
}

// run replays the items in order (indices into the set, repeats allowed)
// with a fresh learner, calibration and judge drawing from seed.
func (r *replayer) run(order []int, run replayRun, seed uint64) (replayed, error) {
	p, err := twoModelPolicy(run.Routing)
	if err != nil {
		return replayed{}, err
	}
	clock := &replayClock{t: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)}
	learner := priors.New(store.NewMemory(store.Options{Clock: clock}), nil, nil)
	cal := calibration.New("bench", nil, nil, nil)
	rt, err := router.NewRouter(p, p.Routes[0], nil, nil, router.WithComplexityModel(r.model), router.WithCalibration(cal), router.WithPriors(learner))
	if err != nil {
		return replayed{}, err
	}
	tenant := &policy.Tenant{Name: replayTenant}
	rng := rand.New(rand.NewPCG(seed, 34))
	out := replayed{Raw: make([]float64, len(order)), Ranked: make([]float64, len(order)), Strong: make([]bool, len(order)), Outcomes: make([]sweep.Outcome, len(order))}
	ctx := context.Background()
	for n, i := range order {
		if n > 0 && n%replayRefresh == 0 {
			learner.Refresh(ctx)
			cal.Refresh(ctx, time.Minute)
		}
		clock.advance(replayPeriod)
		d, e := rt.Decide(&router.Query{Chat: r.requests[i], Tenant: tenant, App: r.apps[r.appOf[i]].Name, Hash: rng.Uint64()})
		if e != nil {
			return replayed{}, fmt.Errorf("%s request %d: %v", r.set.Name, n, e)
		}
		it := r.set.Items[i]
		out.Raw[n], out.Outcomes[n] = d.Score, sweep.Outcome{Weak: it.Weak, Strong: it.Strong}
		out.Strong[n] = d.Plan[0].Name == "strong"
		out.Ranked[n] = d.Score
		if d.Domain == nil {
			continue
		}
		out.Ranked[n] += d.Domain.Shift()
		if rng.Float64() >= run.Judge*judgeWeight(d.Domain) {
			continue
		}
		// A strong answer is graded against the weak model's (bought at
		// the weak model's price); a weak one against the strong model's,
		// within the route's exploration budget.
		if !out.Strong[n] {
			if !d.Domain.Explore() {
				continue
			}
			out.Bought++
		}
		k := d.Domain.Key()
		learner.Rate("chat", replayTenant, k.App, k.FP, d.Score, r.verdict(i), "judge")
		out.Verdicts++
	}
	return out, nil
}

// judgeWeight is how the judge filter weighs a request's draw on a
// learning route: by its domain's weight once it has one.
func judgeWeight(d *priors.Domain) float64 {
	if w := d.JudgeWeight(); w > 0 {
		return w
	}
	return 1
}

type replayClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *replayClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *replayClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
