package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/switchyard/switchyard/bench/routing/sweep"
	"github.com/switchyard/switchyard/bench/routing/train"
	"github.com/switchyard/switchyard/filters/router/complexity"
)

// Frac is the quality bar: a router must keep this share of the strong
// model's quality.
const Frac = 0.95

// Prices of the two models in USD per million tokens, blended at RouteLLM's
// 1:1 input:output assumption, as the RouteLLM paper (arXiv 2406.18665,
// section 5) gives them: GPT-4 Turbo (gpt-4-1106-preview) $24.7 and
// Mixtral-8x7B-Instruct $0.24. The data has no token counts, so dollars
// follow from the share of calls: cost = share·strong + (1−share)·weak.
const (
	StrongUSDPerMTok = 24.7
	WeakUSDPerMTok   = 0.24
)

// curveShares are the strong-call budgets at which the in-sample curve is
// read.
var curveShares = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}

// operating is a threshold router's result on one benchmark.
type operating struct {
	Share   float64 // strong-call share
	Quality float64 // quality as a share of the all-strong quality
	Met     bool    // Quality reached Frac
	Label   string  // the threshold, as printed
}

// result holds everything reported for one benchmark.
type result struct {
	Name         string
	N, Dropped   int
	Weak, Strong float64

	// Cheapest strong share reaching Frac when the threshold is swept on
	// this benchmark; the classifier's model never saw it.
	Classifier, Length, Random, Oracle float64
	// Operating points with the threshold chosen on the other benchmarks.
	ClassifierT, LengthT, RandomT operating
	// The production model, trained on all three benchmarks.
	InSample      float64
	InSampleCurve []float64
	LengthCurve   []float64

	DecideMean, DecideP99 time.Duration
	// The whole curve, held out: average performance gap recovered and
	// the strong share for Frac, with 95 % bootstrap intervals over the
	// benchmark's prompts; Gap is the classifier's APGR minus the length
	// rule's on the same replicates.
	APGR, LengthAPGR, Gap  interval
	ShareCI, LengthShareCI interval
	// At the shipped default threshold (complexity.medium_at 0.4): the
	// held-out model's and the shipped (in-sample) model's operating
	// points.
	DefaultHeld, DefaultShipped operating
	// HeldCurve is the held-out classifier's quality, as a share of the
	// all-strong quality, at strong shares 0, 1/curvePoints, …, 1.
	HeldCurve []float64
	// Ceilings: what routers that have seen this benchmark reach, as APGR
	// over the whole curve. SelfFit is the classifier's features fitted on
	// this benchmark alone; GroupPrior ranks each prompt by the mean gain
	// of the other prompts of its MMLU subject or MT-Bench category (a
	// perfect domain detector with per-domain priors), ties broken by
	// length; HasGroups is false for a benchmark without groups.
	SelfFit, GroupPrior, OracleAPGR float64
	HasGroups                       bool
}

// interval is an estimate with its 95 % bootstrap interval.
type interval struct{ Est, Lo, Hi float64 }

// Bootstrap settings: replicates of each benchmark's prompts, drawn with a
// fixed seed so the report is reproducible.
const (
	replicates = 1000
	apgrSteps  = 100
)

// ShippedMediumAt is the route default (configs/policy): the threshold a
// route without complexity settings routes at.
const ShippedMediumAt = 0.4

// bootstrap estimates the classifier's and the length rule's APGR and
// strong share for Frac on b's prompts, resampling both on the same
// prompts so that their difference is paired.
func bootstrap(held, length sweep.Scored, res *result) {
	share := func(s sweep.Scored) float64 {
		p, _ := sweep.Cheapest(s.Curve(), s.Target(Frac)) // all-strong always reaches it
		return p.Share
	}
	res.APGR.Est, res.LengthAPGR.Est = held.APGR(apgrSteps), length.APGR(apgrSteps)
	res.Gap.Est = res.APGR.Est - res.LengthAPGR.Est
	res.ShareCI.Est, res.LengthShareCI.Est = share(held), share(length)
	rng := rand.New(rand.NewPCG(18, uint64(len(held.Scores))))
	var apgr, lapgr, gap, sh, lsh []float64
	for range replicates {
		var idx []int
		pick := func(n int) int { i := rng.IntN(n); idx = append(idx, i); return i }
		h := held.Resample(pick)
		k := 0
		l := length.Resample(func(int) int { i := idx[k]; k++; return i })
		a, la := h.APGR(apgrSteps), l.APGR(apgrSteps)
		apgr, lapgr, gap = append(apgr, a), append(lapgr, la), append(gap, a-la)
		sh, lsh = append(sh, share(h)), append(lsh, share(l))
	}
	for _, x := range []struct {
		iv   *interval
		vals []float64
	}{{&res.APGR, apgr}, {&res.LengthAPGR, lapgr}, {&res.Gap, gap}, {&res.ShareCI, sh}, {&res.LengthShareCI, lsh}} {
		x.iv.Lo, x.iv.Hi = percentile95(x.vals)
	}
}

// curvePoints is the resolution of the curve shipped with the classifier.
const curvePoints = 100

// evaluate scores b with the leave-one-out model (trained on others) and
// the in-sample model, and computes the baselines the same way.
func evaluate(b train.Benchmark, others []train.Benchmark, loo, inSample *complexity.Model) (result, error) {
	res := result{Name: b.Set.Name, N: len(b.Set.Items)}
	res.Weak, res.Strong = b.Set.Means()
	outcomes := b.Outcomes()

	// The held-out scores come from the real classifier; the sweep reads
	// the whole threshold curve from them.
	clf, err := complexity.New(complexity.Config{Model: loo})
	if err != nil {
		return res, err
	}
	held := sweep.Scored{Scores: make([]float64, res.N), Outcomes: outcomes}
	prompts := make([]string, res.N)
	for i, it := range b.Set.Items {
		held.Scores[i] = clf.Score(train.Request(it.Prompt))
		prompts[i] = it.Prompt
	}
	if res.Classifier, err = cheapest(held); err != nil {
		return res, err
	}
	var heldTrain []sweep.Scored
	for _, o := range others {
		heldTrain = append(heldTrain, o.Scored(loo))
	}
	t := sweep.Transfer(heldTrain, Frac)
	res.ClassifierT = operatingAt(held, t, fmt.Sprintf("score ≥ %.3f", t))
	// The operating point is routed again by the production router (its
	// policy, cost-optimized strategy and classifier), whose decisions must
	// be the sweep's; its decision times are the ones reported.
	rt, err := routeAll(prompts, t, loo)
	if err != nil {
		return res, err
	}
	for i, strong := range rt.Strong {
		if strong != (held.Scores[i] >= t) {
			return res, fmt.Errorf("%s prompt %d: the router chose strong=%v at score %.4f and threshold %.4f", res.Name, i, strong, held.Scores[i], t)
		}
	}
	res.DecideMean, res.DecideP99 = timing(rt.Times)
	hc := held.Curve()
	for i := 0; i <= curvePoints; i++ {
		res.HeldCurve = append(res.HeldCurve, sweep.QualityAt(hc, float64(i)/curvePoints)/res.Strong)
	}

	// Longest prompt first: ranked by characters with ties in file order,
	// as the data's README computes it; the transferred threshold is a
	// plain character count.
	length := sweep.Scored{Scores: make([]float64, res.N), Outcomes: outcomes}
	for i, it := range b.Set.Items {
		length.Scores[i] = float64(utf8.RuneCountInString(it.Prompt)) - float64(i)/float64(res.N)
	}
	if res.Length, err = cheapest(length); err != nil {
		return res, err
	}
	var lengthTrain []sweep.Scored
	for _, o := range others {
		lengthTrain = append(lengthTrain, charScores(o))
	}
	tl := sweep.Transfer(lengthTrain, Frac)
	res.LengthT = operatingAt(charScores(b), tl, fmt.Sprintf("≥ %.0f chars", tl))

	bootstrap(held, length, &res)
	res.DefaultHeld = operatingAt(held, ShippedMediumAt, fmt.Sprintf("score ≥ %.1f", ShippedMediumAt))

	res.Random = held.RandomShare(Frac)
	var share float64
	for _, s := range heldTrain {
		share = math.Max(share, s.RandomShare(Frac))
	}
	p := held.RandomAt(share)
	res.RandomT = operating{Share: p.Share, Quality: p.Quality / res.Strong, Met: p.Quality >= Frac*res.Strong-1e-12, Label: fmt.Sprintf("p = %.3f", share)}

	oracle := sweep.Scored{Scores: make([]float64, res.N), Outcomes: outcomes}
	for i, o := range outcomes {
		oracle.Scores[i] = o.Strong - o.Weak - float64(i)/float64(res.N)*1e-6
	}
	if res.Oracle, err = cheapest(oracle); err != nil {
		return res, err
	}

	in := b.Scored(inSample)
	if res.InSample, err = cheapest(in); err != nil {
		return res, err
	}
	res.DefaultShipped = operatingAt(in, ShippedMediumAt, fmt.Sprintf("score ≥ %.1f", ShippedMediumAt))
	res.InSampleCurve = readCurve(in)
	res.LengthCurve = readCurve(length)
	res.OracleAPGR = oracle.APGR(apgrSteps)
	return res, ceilings(b, length, &res)
}

// ceilings fills res's SelfFit, GroupPrior and HasGroups: upper bounds,
// in sample, on what a ranking of this kind finds in b. They say whether
// a held-out shortfall is the features' or the data's.
func ceilings(b train.Benchmark, length sweep.Scored, res *result) error {
	self, err := train.Fit([]train.Benchmark{b}, train.Penalties[0])
	if err != nil {
		return err
	}
	res.SelfFit = b.Scored(self).APGR(apgrSteps)

	type sum struct{ gain, n float64 }
	groups := map[string]sum{}
	for _, it := range b.Set.Items {
		g := groups[it.Group]
		groups[it.Group] = sum{g.gain + it.Strong - it.Weak, g.n + 1}
	}
	res.HasGroups = len(groups) > 1
	if !res.HasGroups {
		return nil
	}
	prior := sweep.Scored{Scores: make([]float64, res.N), Outcomes: length.Outcomes}
	longest := slices.Max(length.Scores)
	for i, it := range b.Set.Items {
		// A prompt's own gain is left out of its group's mean: the prior is
		// in sample per group, not per prompt. Length breaks ties at a
		// scale below any difference of two groups' means.
		g := groups[it.Group]
		mean := 0.0
		if g.n > 1 {
			mean = (g.gain - (it.Strong - it.Weak)) / (g.n - 1)
		}
		prior.Scores[i] = mean + 1e-9*length.Scores[i]/longest
	}
	res.GroupPrior = prior.APGR(apgrSteps)
	return nil
}

func charScores(b train.Benchmark) sweep.Scored {
	s := sweep.Scored{Scores: make([]float64, len(b.Set.Items)), Outcomes: b.Outcomes()}
	for i, it := range b.Set.Items {
		s.Scores[i] = float64(utf8.RuneCountInString(it.Prompt))
	}
	return s
}

func cheapest(s sweep.Scored) (float64, error) {
	p, ok := sweep.Cheapest(s.Curve(), s.Target(Frac))
	if !ok {
		return 0, fmt.Errorf("no threshold reaches %.0f %% of the strong model", Frac*100)
	}
	return p.Share, nil
}

func operatingAt(s sweep.Scored, t float64, label string) operating {
	_, strong := s.Means()
	p := s.At(t)
	return operating{Share: p.Share, Quality: p.Quality / strong, Met: p.Quality >= Frac*strong-1e-12, Label: label}
}

// readCurve returns the quality, as a share of the all-strong quality, at
// each of curveShares.
func readCurve(s sweep.Scored) []float64 {
	_, strong := s.Means()
	curve := s.Curve()
	out := make([]float64, len(curveShares))
	for i, share := range curveShares {
		out[i] = sweep.QualityAt(curve, share) / strong
	}
	return out
}

func timing(times []time.Duration) (mean, p99 time.Duration) {
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return sum / time.Duration(len(times)), sorted[len(sorted)*99/100]
}

// savedUSD is the share of the all-strong bill saved at a strong share.
func savedUSD(share float64) float64 {
	return 1 - (share*StrongUSDPerMTok+(1-share)*WeakUSDPerMTok)/StrongUSDPerMTok
}
