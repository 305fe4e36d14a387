package main

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/switchyard/switchyard/bench/routing/sweep"
	"github.com/switchyard/switchyard/bench/routing/train"
	"github.com/switchyard/switchyard/filters/router/complexity"
)

// Replay settings: the judge's shares, the bootstrap's replays, and the
// window the quality must hold in.
var replayJudges = []float64{0.02, 0.10}

const (
	// replayOrders is how many times the benchmark's own traffic is
	// replayed, each in a new order with its own judge draws: the point
	// figures are their mean (the learning varies with the order).
	replayOrders = 10
	// replayReplicates is how many replays of traffic resampled with
	// replacement give the intervals.
	replayReplicates = 60
	replayWindow     = 500
)

// replayResult is what the replays of one benchmark at one judge share
// report. The learner is the production router on a route with the
// shipped default thresholds and routing.learn; the classifier alone is
// the same replay's scores without the domains' shifts.
type replayResult struct {
	Name     string
	N, Apps  int
	Judge    float64
	Verdicts float64 // mean over the replays of the benchmark's traffic
	// Second half of the replay: APGR, the strong share for 95 % of
	// all-strong quality, and the quality and strong share at the
	// shipped default (medium_at 0.4).
	APGR, BaseAPGR, Gain    interval
	Share95, BaseShare95    interval
	DefaultQ, BaseDefaultQ  interval
	DefaultShare, BaseShare interval
	Cost, BaseCost          interval // whole replay: strong share of calls at the shipped default
	Quality, BaseQuality    interval // whole replay: quality at the shipped default
	// MinWindow is the worst window of 500 after the first 500 in the
	// replays of the benchmark's traffic, WindowsMet the share of them
	// whose every window held 95 %.
	MinWindow, BaseMinWindow   float64
	Windows                    int
	WindowsMet, BaseWindowsMet float64
	// Auto is the replays of the benchmark's traffic on an auto route
	// holding quality_target 0.95, learning too; AutoAlone the same
	// without learning.
	Auto, AutoAlone autoReplay
}

// autoReplay is the auto route's replays: mean strong share and quality
// over each whole replay and its first window, and the worst window.
type autoReplay struct {
	Share, Quality, First, MinWindow float64
}

// halfFigures are the figures of one replay's second half and whole run.
type halfFigures struct {
	apgr, share95, defaultQ, defaultShare, cost, quality float64
	minWindow                                            float64
	windowsMet                                           bool
}

// figures reads one replay: by the learner's ranking (ranked) or the
// classifier's alone (the raw scores, thresholded at the default).
func figures(rp replayed, ranked []float64, strong []bool) halfFigures {
	n := len(rp.Outcomes)
	h := n / 2
	second := sweep.Scored{Scores: ranked[h:], Outcomes: rp.Outcomes[h:]}
	p, _ := sweep.Cheapest(second.Curve(), second.Target(Frac))
	f := halfFigures{apgr: second.APGR(apgrSteps), share95: p.Share}
	f.defaultShare, f.defaultQ = deliveredAt(rp.Outcomes[h:], strong[h:])
	f.cost, f.quality = deliveredAt(rp.Outcomes, strong)
	f.minWindow, f.windowsMet = 1, true
	for w := replayWindow; w+replayWindow <= n; w += replayWindow {
		_, q := deliveredAt(rp.Outcomes[w:w+replayWindow], strong[w:w+replayWindow])
		f.minWindow = min(f.minWindow, q)
		f.windowsMet = f.windowsMet && q >= Frac-1e-12
	}
	return f
}

// deliveredAt is the strong share and the quality (as a share of the
// all-strong quality) of the decisions strong on outcomes.
func deliveredAt(outcomes []sweep.Outcome, strong []bool) (share, quality float64) {
	var got, best float64
	for i, o := range outcomes {
		best += o.Strong
		if strong[i] {
			share++
			got += o.Strong
		} else {
			got += o.Weak
		}
	}
	return share / float64(len(outcomes)), got / best
}

// atDefault is the classifier's own decisions at the shipped default.
func atDefault(scores []float64) []bool {
	out := make([]bool, len(scores))
	for i, s := range scores {
		out[i] = s >= ShippedMediumAt
	}
	return out
}

// replayBenchmark replays b (scored by the leave-one-out model m) at
// each judge share: replayOrders times in new orders for the point
// figures, and replayReplicates times on traffic resampled with
// replacement, in a new order each time, for the intervals.
func replayBenchmark(b train.Benchmark, m *complexity.Model) ([]replayResult, error) {
	rp := newReplayer(b.Set, m)
	n := len(b.Set.Items)
	rng := rand.New(rand.NewPCG(34, uint64(n)))
	var orders [][]int
	for range replayOrders {
		orders = append(orders, rng.Perm(n))
	}
	for range replayReplicates {
		order := make([]int, n)
		for i := range order {
			order[i] = rng.IntN(n)
		}
		orders = append(orders, order)
	}
	alone, err := autoReplays(rp, orders[:replayOrders], replayRun{Routing: routingAutoAlone})
	if err != nil {
		return nil, err
	}
	var out []replayResult
	for _, judge := range replayJudges {
		res := replayResult{Name: b.Set.Name, N: n, Apps: len(rp.apps), Judge: judge}
		var learnt, base []halfFigures
		for k, order := range orders {
			run, err := rp.run(order, replayRun{Routing: routingDefault, Judge: judge}, uint64(k))
			if err != nil {
				return nil, err
			}
			for i, strong := range run.Strong {
				if strong != (run.Ranked[i] >= ShippedMediumAt) {
					return nil, fmt.Errorf("%s replay %d request %d: the router chose strong=%v at the shifted score %.4f", b.Set.Name, k, i, strong, run.Ranked[i])
				}
			}
			learnt = append(learnt, figures(run, run.Ranked, run.Strong))
			base = append(base, figures(run, run.Raw, atDefault(run.Raw)))
			if k < replayOrders {
				res.Verdicts += float64(run.Verdicts) / replayOrders
			}
		}
		res.fill(learnt, base)
		if res.Auto, err = autoReplays(rp, orders[:replayOrders], replayRun{Routing: routingAuto, Judge: judge}); err != nil {
			return nil, err
		}
		res.AutoAlone = alone
		out = append(out, res)
	}
	return out, nil
}

// autoReplays replays the orders with run, on an auto route.
func autoReplays(rp *replayer, orders [][]int, run replayRun) (autoReplay, error) {
	a := autoReplay{MinWindow: 1}
	k := float64(len(orders))
	for i, order := range orders {
		rep, err := rp.run(order, run, uint64(i))
		if err != nil {
			return a, err
		}
		f := figures(rep, rep.Ranked, rep.Strong)
		first := min(replayWindow, len(order))
		_, q := deliveredAt(rep.Outcomes[:first], rep.Strong[:first])
		a.Share, a.Quality, a.First = a.Share+f.cost/k, a.Quality+f.quality/k, a.First+q/k
		a.MinWindow = min(a.MinWindow, f.minWindow)
	}
	return a, nil
}

// fill sets res's point figures (the mean over the replays of the
// benchmark's traffic, the first replayOrders) and intervals (the
// resampled replays').
func (res *replayResult) fill(learnt, base []halfFigures) {
	pairs := []struct {
		iv  *interval
		get func(l, b halfFigures) float64
	}{
		{&res.APGR, func(l, _ halfFigures) float64 { return l.apgr }},
		{&res.BaseAPGR, func(_, b halfFigures) float64 { return b.apgr }},
		{&res.Gain, func(l, b halfFigures) float64 { return l.apgr - b.apgr }},
		{&res.Share95, func(l, _ halfFigures) float64 { return l.share95 }},
		{&res.BaseShare95, func(_, b halfFigures) float64 { return b.share95 }},
		{&res.DefaultQ, func(l, _ halfFigures) float64 { return l.defaultQ }},
		{&res.BaseDefaultQ, func(_, b halfFigures) float64 { return b.defaultQ }},
		{&res.DefaultShare, func(l, _ halfFigures) float64 { return l.defaultShare }},
		{&res.BaseShare, func(_, b halfFigures) float64 { return b.defaultShare }},
		{&res.Cost, func(l, _ halfFigures) float64 { return l.cost }},
		{&res.BaseCost, func(_, b halfFigures) float64 { return b.cost }},
		{&res.Quality, func(l, _ halfFigures) float64 { return l.quality }},
		{&res.BaseQuality, func(_, b halfFigures) float64 { return b.quality }},
	}
	for _, p := range pairs {
		p.iv.Est = 0
		for i := range replayOrders {
			p.iv.Est += p.get(learnt[i], base[i]) / replayOrders
		}
		var vals []float64
		for i := replayOrders; i < len(learnt); i++ {
			vals = append(vals, p.get(learnt[i], base[i]))
		}
		slices.Sort(vals)
		p.iv.Lo, p.iv.Hi = vals[len(vals)*25/1000], vals[len(vals)*975/1000-1]
	}
	res.MinWindow, res.BaseMinWindow = 1, 1
	res.Windows = (res.N - replayWindow) / replayWindow
	for i := range replayOrders {
		res.MinWindow, res.BaseMinWindow = min(res.MinWindow, learnt[i].minWindow), min(res.BaseMinWindow, base[i].minWindow)
		if learnt[i].windowsMet {
			res.WindowsMet += 1.0 / replayOrders
		}
		if base[i].windowsMet {
			res.BaseWindowsMet += 1.0 / replayOrders
		}
	}
}

// Issue 34's targets on the MMLU replay's second half.
var replayTargets = map[float64]float64{0.10: 0.65, 0.02: 0.62}

// renderReplays writes the replays' figures and the verdict on issue 34's
// targets.
func (r report) renderReplays(p func(string, ...any)) {
	if len(r.Replays) == 0 {
		return
	}
	p("### Learning each app's traffic: replays\n\n")
	p("Each benchmark is sent as one tenant's traffic, one request a second in a random order, through the production router on a route with the shipped default thresholds that learns domain priors (`routing.learn` with its defaults; `state/priors`), scored by the classifier trained on the other two benchmarks. ")
	p("The apps are the benchmark's groups, each under its own system prompt: MMLU's 57 subjects, MT-Bench's 8 categories, GSM8K as one app. ")
	p("A simulated judge draws its share of the requests (weighed toward the domains whose estimates are least sure) and grades the weak model's answer against the strong model's with the per-prompt ground truth (1 when the weak answer is as good, less by the strong model's lead): a request the strong model served by a shadow grading, one the weak model served only while the learning's exploration budget (5 %% of the strong calls) can buy the reference. The learning sees the outcomes only through those verdicts. ")
	p("\"Classifier alone\" is the same replays' scores without the domains' shifts. APGR and the strong share for 95 %% are read over each replay's second half from the score the router ranked each request by when it came; the quality and strong share at the shipped default are the router's own decisions at `medium_at` %.1f. ", ShippedMediumAt)
	p("Figures are the mean of %d replays of the benchmark's traffic, each in a new order with its own judge draws (the learning varies with the order); brackets are 95 %% intervals over %d replays of traffic resampled with replacement, each in a new order; the learner − classifier difference is paired on the same replays. Verdicts are the judge's per replay.\n\n", replayOrders, replayReplicates)
	p("| Benchmark | Apps | Judge | Verdicts | APGR learner | APGR classifier alone | Learner − classifier | Strong share for 95 %%, learner | Strong share for 95 %%, classifier | Quality at the default, learner (strong share) | Quality at the default, classifier (strong share) |\n|---|---:|---:|---:|---|---|---|---|---|---|---|\n")
	for _, x := range r.Replays {
		p("| %s | %d | %s | %.0f | %s | %s | %s | %s | %s | %s (%s) | %s (%s) |\n", x.Name, x.Apps, pct(x.Judge), x.Verdicts, x.APGR.fmt(3), x.BaseAPGR.fmt(3), x.Gain.signed(),
			x.Share95.pct(), x.BaseShare95.pct(), x.DefaultQ.pct(), pct(x.DefaultShare.Est), x.BaseDefaultQ.pct(), pct(x.BaseShare.Est))
	}
	p("\nThe whole replay, cumulatively, at the shipped default: the strong share of calls (the cost; dollars saved against all-strong at the prices above) and the quality as a share of all-strong quality, with intervals as above; the worst window of %d requests after the first %d over the %d replays of the benchmark's traffic, and the share of those replays whose every such window kept 95 %%. ", replayWindow, replayWindow, replayOrders)
	p("The auto route is the same traffic on a route asking `quality_target: 0.95` (a strong share of %.0f %% read off the shipped curve, held by the calibration), with and without learning: mean strong share and quality over each whole replay and over its first %d requests, and the worst window.\n\n", 100*autoShare(), replayWindow)
	p("| Benchmark | Judge | Strong share, learner | Strong share, classifier | Quality, learner | Quality, classifier | Worst window, learner | Worst window, classifier | Every window ≥ 95 %%, learner | classifier |\n|---|---:|---|---|---|---|---:|---:|---:|---:|\n")
	for _, x := range r.Replays {
		win, base, met, bmet := "n/a", "n/a", "n/a", "n/a"
		if x.Windows > 0 {
			win, base, met, bmet = pct(x.MinWindow), pct(x.BaseMinWindow), pct(x.WindowsMet), pct(x.BaseWindowsMet)
		}
		p("| %s | %s | %s (%s saved) | %s (%s saved) | %s | %s | %s | %s | %s | %s |\n", x.Name, pct(x.Judge), x.Cost.pct(), pct(savedUSD(x.Cost.Est)), x.BaseCost.pct(), pct(savedUSD(x.BaseCost.Est)),
			x.Quality.pct(), x.BaseQuality.pct(), win, base, met, bmet)
	}
	p("\n| Benchmark | Judge | Auto route, learner: strong share | quality | first %d | worst window | Auto route, classifier alone: strong share | quality | first %d | worst window |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", replayWindow, replayWindow)
	for _, x := range r.Replays {
		lw, aw := "n/a", "n/a"
		if x.Windows > 0 {
			lw, aw = pct(x.Auto.MinWindow), pct(x.AutoAlone.MinWindow)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Name, pct(x.Judge), pct(x.Auto.Share), pct(x.Auto.Quality), pct(x.Auto.First), lw,
			pct(x.AutoAlone.Share), pct(x.AutoAlone.Quality), pct(x.AutoAlone.First), aw)
	}
	verdict := func(judge float64) string {
		for _, x := range r.Replays {
			if x.Name == "MMLU" && x.Judge == judge {
				return fmt.Sprintf("%.3f [%.3f, %.3f] against %.2f: **%s**", x.APGR.Est, x.APGR.Lo, x.APGR.Hi, replayTargets[judge], yesNo(x.APGR.Est >= replayTargets[judge]))
			}
		}
		return "not run"
	}
	defaultMet := true
	for _, x := range r.Replays {
		defaultMet = defaultMet && x.Quality.Est >= Frac-1e-12 && (x.Windows == 0 || x.MinWindow >= Frac-1e-12)
	}
	p("\nIssue 34's targets: MMLU replay, second half, APGR at a 10 %% judge %s; at a 2 %% judge %s; every replay's quality at the shipped default ≥ 95 %% of all-strong, over the whole replay and in every window of %d after the first %d: **%s**.\n\n", verdict(0.10), verdict(0.02), replayWindow, replayWindow, yesNo(defaultMet))
}

// autoShare is the strong share routingAuto's quality target reads off
// the shipped curve.
func autoShare() float64 {
	c, err := complexity.DefaultCurve()
	if err != nil {
		return 0
	}
	return c.ShareFor(0.95)
}
