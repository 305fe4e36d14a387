package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/switchyard/switchyard/bench/routing/sweep"
	"github.com/switchyard/switchyard/bench/routing/train"
	"github.com/switchyard/switchyard/filters/router/complexity"
)

// replaySection names the replays' part of docs/BENCHMARKS.md.
const replaySection = "routing-replay"

// Replay settings: the judge's shares, the replays, and the window the
// quality must hold in.
var replayJudges = []float64{0.02, 0.10}

const (
	// replayOrders is how many times the benchmark's own traffic is
	// replayed, each in a new order with its own judge draws: the point
	// figures are their mean (the learning varies with the order).
	replayOrders = 10
	// replayReplicates is how many replays of traffic resampled with
	// replacement give the intervals.
	replayReplicates = 100
	replayWindow     = 500
)

// replayReport is the replays' section of the report.
type replayReport struct {
	Date, Machine, GoVersion, Load string
	// Half is the half of each replay the ranking figures are read over.
	Half    half
	Replays []replayResult
}

// half is the half of a replay the ranking figures (APGR, the strong
// share for 95 %, the quality at the default) are read over. The
// reported figures, and issue 34's targets, are the second half's. The
// first is for development (-score-half first): settings are compared
// on it, so that the reported half is never looked at to choose them.
type half bool

const (
	secondHalf half = false
	firstHalf  half = true
)

// of is the half's requests among n: [lo, hi).
func (h half) of(n int) (lo, hi int) {
	if h == firstHalf {
		return 0, n / 2
	}
	return n / 2, n
}

func (h half) String() string {
	if h == firstHalf {
		return "first"
	}
	return "second"
}

// replayResult is what the replays of one benchmark at one judge share
// report. The learner is the production router on a route with the
// shipped default thresholds and routing.learn; the classifier alone is
// the same replay's scores without the domains' shifts.
type replayResult struct {
	Name    string
	N, Apps int
	Judge   float64
	// Verdicts is the judge's per replay, Bought the strong answers the
	// learning bought to grade weak ones against, as a share of the
	// requests (mean over the replays of the benchmark's traffic).
	Verdicts, Bought float64
	// The scored half of the replay (the second, but in development):
	// APGR, the strong share for 95 % of
	// all-strong quality, and the quality and strong share at the
	// shipped default (medium_at 0.4).
	APGR, BaseAPGR, Gain    interval
	Share95, BaseShare95    interval
	DefaultQ, BaseDefaultQ  interval
	DefaultShare, BaseShare interval
	// The whole replay at the shipped default: strong calls per request
	// (the learner's including those it bought) and quality.
	Cost, BaseCost       interval
	Quality, BaseQuality interval
	// Over the replays of the benchmark's traffic: the worst whole-replay
	// quality, the worst window of replayWindow after the first, and the
	// replays that kept Frac over the whole and in every such window;
	// Windows counts a replay's windows.
	MinQuality, BaseMinQuality float64
	MinWindow, BaseMinWindow   float64
	Windows, Met, BaseMet      int
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

// replayFigures are the figures of one replay.
type replayFigures struct {
	apgr, share95, defaultQ, defaultShare float64 // the scored half
	cost, quality                         float64 // whole replay
	minWindow                             float64
	met                                   bool // whole and every window ≥ Frac
}

// figures reads one replay whose requests were ranked by ranked and
// routed strong where strong says, the ranking over half h; bought is
// the strong calls spent beside them.
func figures(rp replayed, ranked []float64, strong []bool, bought int, h half) replayFigures {
	n := len(rp.Outcomes)
	lo, hi := h.of(n)
	scored := sweep.Scored{Scores: ranked[lo:hi], Outcomes: rp.Outcomes[lo:hi]}
	p, _ := sweep.Cheapest(scored.Curve(), scored.Target(Frac)) // all-strong always reaches it
	f := replayFigures{apgr: scored.APGR(apgrSteps), share95: p.Share}
	f.defaultShare, f.defaultQ = deliveredAt(rp.Outcomes[lo:hi], strong[lo:hi])
	f.cost, f.quality = deliveredAt(rp.Outcomes, strong)
	f.cost += float64(bought) / float64(n)
	var windowsMet bool
	f.minWindow, windowsMet = windows(rp.Outcomes, strong)
	f.met = windowsMet && f.quality >= Frac-1e-12
	return f
}

// windows is the worst quality over the windows of replayWindow requests
// after the first, and whether each kept Frac; 1 and true when the
// replay is too short to have one.
func windows(outcomes []sweep.Outcome, strong []bool) (worst float64, met bool) {
	worst, met = 1, true
	for w := replayWindow; w+replayWindow <= len(outcomes); w += replayWindow {
		_, q := deliveredAt(outcomes[w:w+replayWindow], strong[w:w+replayWindow])
		worst = min(worst, q)
		met = met && q >= Frac-1e-12
	}
	return worst, met
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

// replayOrdersOf is the orders a benchmark of n requests is replayed in:
// replayOrders permutations of its traffic, then replayReplicates
// resamplings of it with replacement, each in a new order.
func replayOrdersOf(n int) [][]int {
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
	return orders
}

// replayBenchmark replays b (scored by the leave-one-out model m) at
// each judge share, reading the ranking figures over half h.
func replayBenchmark(b train.Benchmark, m *complexity.Model, h half) ([]replayResult, error) {
	rp := newReplayer(b.Set, m)
	n := len(b.Set.Items)
	orders := replayOrdersOf(n)
	alone, err := autoReplays(rp, orders[:replayOrders], replayRun{Routing: routingAutoAlone})
	if err != nil {
		return nil, err
	}
	var out []replayResult
	for _, judge := range replayJudges {
		res := replayResult{Name: b.Set.Name, N: n, Apps: len(rp.apps), Judge: judge, AutoAlone: alone}
		var learnt, base []replayFigures
		for k, order := range orders {
			run, err := rp.run(order, replayRun{Routing: routingDefault, Judge: judge}, uint64(k))
			if err != nil {
				return nil, err
			}
			// The router's own decisions must be its shifted scores at the
			// default threshold, or the APGR read off them is not its own.
			for i, strong := range run.Strong {
				if strong != (run.Ranked[i] >= ShippedMediumAt) {
					return nil, fmt.Errorf("%s replay %d request %d: the router chose strong=%v at the shifted score %.4f", b.Set.Name, k, i, strong, run.Ranked[i])
				}
			}
			learnt = append(learnt, figures(run, run.Ranked, run.Strong, run.Bought, h))
			base = append(base, figures(run, run.Raw, atDefault(run.Raw), 0, h))
			if k < replayOrders {
				res.Verdicts += float64(run.Verdicts) / replayOrders
				res.Bought += float64(run.Bought) / float64(n) / replayOrders
			}
		}
		res.fill(learnt, base)
		if res.Auto, err = autoReplays(rp, orders[:replayOrders], replayRun{Routing: routingAuto, Judge: judge}); err != nil {
			return nil, err
		}
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
		f := figures(rep, rep.Ranked, rep.Strong, rep.Bought, secondHalf) // its whole-replay figures only
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
func (res *replayResult) fill(learnt, base []replayFigures) {
	pairs := []struct {
		iv  *interval
		get func(l, b replayFigures) float64
	}{
		{&res.APGR, func(l, _ replayFigures) float64 { return l.apgr }},
		{&res.BaseAPGR, func(_, b replayFigures) float64 { return b.apgr }},
		{&res.Gain, func(l, b replayFigures) float64 { return l.apgr - b.apgr }},
		{&res.Share95, func(l, _ replayFigures) float64 { return l.share95 }},
		{&res.BaseShare95, func(_, b replayFigures) float64 { return b.share95 }},
		{&res.DefaultQ, func(l, _ replayFigures) float64 { return l.defaultQ }},
		{&res.BaseDefaultQ, func(_, b replayFigures) float64 { return b.defaultQ }},
		{&res.DefaultShare, func(l, _ replayFigures) float64 { return l.defaultShare }},
		{&res.BaseShare, func(_, b replayFigures) float64 { return b.defaultShare }},
		{&res.Cost, func(l, _ replayFigures) float64 { return l.cost }},
		{&res.BaseCost, func(_, b replayFigures) float64 { return b.cost }},
		{&res.Quality, func(l, _ replayFigures) float64 { return l.quality }},
		{&res.BaseQuality, func(_, b replayFigures) float64 { return b.quality }},
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
		p.iv.Lo, p.iv.Hi = percentile95(vals)
	}
	res.MinQuality, res.BaseMinQuality, res.MinWindow, res.BaseMinWindow = 1, 1, 1, 1
	res.Windows = (res.N - replayWindow) / replayWindow
	for i := range replayOrders {
		res.MinQuality, res.BaseMinQuality = min(res.MinQuality, learnt[i].quality), min(res.BaseMinQuality, base[i].quality)
		res.MinWindow, res.BaseMinWindow = min(res.MinWindow, learnt[i].minWindow), min(res.BaseMinWindow, base[i].minWindow)
		if learnt[i].met {
			res.Met++
		}
		if base[i].met {
			res.BaseMet++
		}
	}
}

// Issue 34's targets on the MMLU replay's second half.
var replayTargets = map[float64]float64{0.10: 0.65, 0.02: 0.62}

// render writes the replays' figures and the verdict on issue 34's
// targets.
func (r replayReport) render(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Learning each app's traffic: replays\n\n")
	p("Generated by `make bench-routing` (`go run ./bench/routing -part replay -write docs/BENCHMARKS.md` for this section alone) on %s; %s; %s; one-minute load average %s at the start.\n\n", r.Date, r.Machine, r.GoVersion, r.Load)
	p("Each benchmark is sent as one tenant's traffic, one request a second in a random order (the time order), through the production router (`filters/router`) on a route with the shipped default thresholds that learns domain priors (`routing.learn` with its defaults, `state/priors`: refreshed every %d requests, as the gateway does every few seconds), scored by the classifier trained on the other two benchmarks. ", replayRefresh)
	p("The apps are the benchmark's groups, each under its own system prompt: MMLU's 57 subjects, MT-Bench's 8 categories, GSM8K as one app; a domain is the app and its system prompt's fingerprint. ")
	p("A simulated judge draws its share of the requests as the judge filter does (weighed by each domain's judge weight, toward the domains whose estimates are least sure) and grades the weak model's answer against the strong model's with the per-prompt ground truth (1 when the weak answer is as good, less by the strong model's lead, on MT-Bench's 1–10 scale over 9): ")
	p("a request the strong model served by a shadow grading (the weak answer bought at the weak model's price), one the weak model served only while the learning's exploration budget (`explore`, 5 %% of the strong calls) can buy the reference. The learning sees the outcomes only through those verdicts, given to `priors.Learner.Rate` as the judge filter gives them.\n\n")
	p("\"Classifier alone\" is the same replays' scores without the domains' shifts, routed at the same threshold. APGR and the strong share for 95 %% are read over each replay's %s half from the score the router ranked each request by when it came (the classifier's score plus its domain's shift at the time); the quality and strong share at the shipped default are the router's own decisions at `medium_at` %.1f, which the run checks equal those scores at the threshold. ", r.Half, ShippedMediumAt)
	p("Figures are the mean of %d replays of the benchmark's traffic, each in a new order with its own judge draws; brackets are 95 %% intervals over %d replays of traffic resampled with replacement, each in a new order (they cover the traffic's sampling, the order and the judge's draws); the learner − classifier difference is paired on the same replays.\n\n", replayOrders, replayReplicates)
	p("| Benchmark | Apps | Judge | Verdicts | APGR, learner | APGR, classifier alone | Learner − classifier | Strong share for 95 %%, learner | Strong share for 95 %%, classifier | Quality at the default, learner (strong share) | Quality at the default, classifier (strong share) |\n|---|---:|---:|---:|---|---|---|---|---|---|---|\n")
	for _, x := range r.Replays {
		p("| %s | %d | %s | %.0f | %s | %s | %s | %s | %s | %s (%s) | %s (%s) |\n", x.Name, x.Apps, pct(x.Judge), x.Verdicts, x.APGR.fmt(3), x.BaseAPGR.fmt(3), x.Gain.signed(),
			x.Share95.pct(), x.BaseShare95.pct(), x.DefaultQ.pct(), pct(x.DefaultShare.Est), x.BaseDefaultQ.pct(), pct(x.BaseShare.Est))
	}
	p("\nThe whole replay, cumulatively, at the shipped default: strong calls per request (the cost; the learner's include the strong answers its exploration bought, the share in brackets after the dollars saved against all-strong at the prices above) and the quality as a share of all-strong quality, with intervals as above; ")
	p("over the %d replays of the benchmark's traffic, the worst whole-replay quality, the worst window of %d requests after the first %d, and how many of those replays kept 95 %% over the whole and in every such window. The judge's own calls are not counted.\n\n", replayOrders, replayWindow, replayWindow)
	p("| Benchmark | Judge | Strong calls, learner | Strong calls, classifier | Quality, learner | Quality, classifier | Worst replay, learner | classifier | Worst window, learner | classifier | Replays ≥ 95 %% throughout, learner | classifier |\n|---|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Replays {
		win, base := "no window", "no window"
		if x.Windows > 0 {
			win, base = pct(x.MinWindow), pct(x.BaseMinWindow)
		}
		p("| %s | %s | %s (%s saved; %s bought) | %s (%s saved) | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Name, pct(x.Judge), x.Cost.pct(), pct(savedUSD(x.Cost.Est)), pct(x.Bought), x.BaseCost.pct(), pct(savedUSD(x.BaseCost.Est)),
			x.Quality.pct(), x.BaseQuality.pct(), pct(x.MinQuality), pct(x.BaseMinQuality), win, base, fmt.Sprintf("%d of %d", x.Met, replayOrders), fmt.Sprintf("%d of %d", x.BaseMet, replayOrders))
	}
	p("\nThe same traffic on an auto route asking `quality_target: 0.95` (a strong share of %.0f %% read off the shipped curve, held by the calibration on the shifted scores), learning and not: mean strong calls per request and quality over each whole replay and over its first %d requests, and the worst window.\n\n", 100*autoShare(), replayWindow)
	p("| Benchmark | Judge | Auto, learner: strong calls | quality | first %d | worst window | Auto, classifier alone: strong calls | quality | first %d | worst window |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", replayWindow, replayWindow)
	for _, x := range r.Replays {
		lw, aw := "no window", "no window"
		if x.Windows > 0 {
			lw, aw = pct(x.Auto.MinWindow), pct(x.AutoAlone.MinWindow)
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", x.Name, pct(x.Judge), pct(x.Auto.Share), pct(x.Auto.Quality), pct(x.Auto.First), lw,
			pct(x.AutoAlone.Share), pct(x.AutoAlone.Quality), pct(x.AutoAlone.First), aw)
	}
	p("\n%s\n", r.verdict())
}

// verdict states issue 34's replay targets and whether they were met;
// they are the second half's, so a development run states none.
func (r replayReport) verdict() string {
	if r.Half == firstHalf {
		return "A development run (`-score-half first`): the ranking figures are the replays' first halves, issue 34's targets are on the second; no verdict."
	}
	apgr := func(judge float64) string {
		for _, x := range r.Replays {
			if x.Name == "MMLU" && x.Judge == judge {
				return fmt.Sprintf("%.3f [%.3f, %.3f] against %.2f: **%s**", x.APGR.Est, x.APGR.Lo, x.APGR.Hi, replayTargets[judge], yesNo(x.APGR.Est >= replayTargets[judge]))
			}
		}
		return "not run"
	}
	met := true
	for _, x := range r.Replays {
		met = met && x.Met == replayOrders
	}
	return fmt.Sprintf("Issue 34's targets: MMLU replay, second half, APGR at a 10 %% judge %s; at a 2 %% judge %s; every replay's quality at the shipped default ≥ 95 %% of all-strong, over the whole replay and in every window of %d after the first %d: **%s**.",
		apgr(0.10), apgr(0.02), replayWindow, replayWindow, yesNo(met))
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

// percentile95 is the central 95 % interval of vals: as many values
// below its low end as above its high end.
func percentile95(vals []float64) (lo, hi float64) {
	slices.Sort(vals)
	k := len(vals) * 25 / 1000
	return vals[k], vals[len(vals)-1-k]
}
