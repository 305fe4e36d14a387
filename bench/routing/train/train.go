package train

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/switchyard/switchyard/bench/routing/routellm"
	"github.com/switchyard/switchyard/bench/routing/sweep"
	"github.com/switchyard/switchyard/filters/router/complexity"
)

// Targets are the quality targets the fit aims at, as shares of the
// all-strong quality: a band around the 95 % the benchmark reports, because
// the savings at one exact target jump with single prompts and a search on
// them overfits.
var Targets = []float64{0.9, 0.925, 0.95, 0.975}

// Benchmark is one training benchmark: its items and their features.
type Benchmark struct {
	Set      routellm.Set
	Features []complexity.Features
}

// Request turns one benchmark prompt into the classifier's input.
func Request(prompt string) *complexity.Request {
	return &complexity.Request{Messages: []complexity.Message{{Role: "user", Text: prompt}}}
}

// NewBenchmark extracts the features of every item of s.
func NewBenchmark(s routellm.Set) Benchmark {
	b := Benchmark{Set: s, Features: make([]complexity.Features, len(s.Items))}
	for i, it := range s.Items {
		b.Features[i] = complexity.Extract(Request(it.Prompt), 0)
	}
	return b
}

// Scored returns b as model m scores it, for package sweep.
func (b Benchmark) Scored(m *complexity.Model) sweep.Scored {
	s := sweep.Scored{Scores: make([]float64, len(b.Features)), Outcomes: b.Outcomes()}
	for i := range b.Features {
		s.Scores[i] = m.Calibrate(m.Raw(&b.Features[i]))
	}
	return s
}

// Outcomes returns what each model reached on each item.
func (b Benchmark) Outcomes() []sweep.Outcome {
	out := make([]sweep.Outcome, len(b.Set.Items))
	for i, it := range b.Set.Items {
		out[i] = sweep.Outcome{Weak: it.Weak, Strong: it.Strong}
	}
	return out
}

// Start and Sign encode what is known before seeing any data. The search
// starts from the longest-prompt-first rule (the known baseline: log_chars
// weighs 1, all else 0), and each feature may only move in the direction
// its meaning implies (+1 harder, −1 easier), so a quirk of one benchmark
// cannot teach the model that, say, asking for a proof makes a prompt easier.
// Conversation length, system prompt and tools never vary in the data
// (single-turn prompts, no tools); they keep hand-set weights.
var (
	Start = map[string]float64{
		"log_chars":         1,
		"log_turns":         0.3,
		"log_context_chars": 0.05,
		"log_system_chars":  0.02,
		"log_tools":         0.4,
	}
	Sign = map[string]float64{"log_open_ended_markers": -1}
	// Fixed lists the features the search leaves at their Start weight.
	Fixed = map[string]bool{"log_turns": true, "log_context_chars": true, "log_system_chars": true, "log_tools": true}
)

// Penalties is the grid of L1 penalties (savings given up per unit of
// weight moved away from Start) that SelectPenalty chooses from.
var Penalties = []float64{0.005, 0.02, 0.05}

// steps are the moves tried on each weight, largest first.
var steps = []float64{0.5, -0.5, 0.25, -0.25, 0.1, -0.1, 0.05, -0.05}

// maxPasses bounds the coordinate search.
const maxPasses = 6

// QuantileCount is the number of calibration quantiles a model stores.
const QuantileCount = 101

// Fit trains a model on benches with the given L1 penalty. It maximises
// the mean, over the benchmarks (each weighted equally, whatever its size)
// and over Targets, of the strong-call savings, by
// coordinate search from Start: each pass tries every step on every free
// weight, in feature order, and keeps a move only if it strictly improves
// the penalised objective. Calibration quantiles come from the same
// prompts, again weighting benchmarks equally.
func Fit(benches []Benchmark, penalty float64) (*complexity.Model, error) {
	if len(benches) == 0 {
		return nil, errors.New("train: no benchmarks")
	}
	names := complexity.FeatureNames()
	w := make([]float64, complexity.NumFeatures)
	for i, name := range names {
		w[i] = Start[name]
	}
	objective := func(w []float64) float64 {
		var saved float64
		for _, b := range benches {
			saved += savings(b, w)
		}
		saved /= float64(len(benches))
		for i, name := range names {
			if !Fixed[name] && name != "log_chars" {
				saved -= penalty * math.Abs(w[i]-Start[name])
			}
		}
		return saved
	}
	best := objective(w)
	for range maxPasses {
		improved := false
		for i, name := range names {
			if Fixed[name] {
				continue
			}
			sign := Sign[name]
			if sign == 0 {
				sign = 1
			}
			for _, step := range steps {
				old := w[i]
				w[i] = math.Round((old+step)*1e6) / 1e6 // keeps model.json readable
				if w[i]*sign < 0 {
					w[i] = old
					continue
				}
				if o := objective(w); o > best+1e-12 {
					best = o
					improved = true
				} else {
					w[i] = old
				}
			}
		}
		if !improved {
			break
		}
	}
	m := &complexity.Model{
		Features: append([]string(nil), names...),
		Weights:  w,
		Source: fmt.Sprintf("go run ./bench/routing -update-model: coordinate search on %s, L1 penalty %g",
			strings.Join(benchNames(benches), ", "), penalty),
	}
	m.Quantiles = quantiles(m, benches)
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// SelectPenalty chooses the penalty from Penalties by cross-validation
// across benches: for each penalty, fit on all benchmarks but one and
// measure savings on the one left out; the best mean wins (ties go to the
// larger penalty, the simpler model). With a single benchmark it returns
// the largest penalty.
func SelectPenalty(benches []Benchmark) (float64, error) {
	if len(benches) < 2 {
		return Penalties[len(Penalties)-1], nil
	}
	best, bestSaved := 0.0, math.Inf(-1)
	for _, penalty := range Penalties {
		var saved float64
		for held := range benches {
			m, err := Fit(without(benches, held), penalty)
			if err != nil {
				return 0, err
			}
			saved += savings(benches[held], m.Weights)
		}
		if saved >= bestSaved-1e-12 {
			best, bestSaved = penalty, saved
		}
	}
	return best, nil
}

// FitSelected selects the penalty on benches and fits with it.
func FitSelected(benches []Benchmark) (*complexity.Model, error) {
	penalty, err := SelectPenalty(benches)
	if err != nil {
		return nil, err
	}
	return Fit(benches, penalty)
}

// without returns benches less the one at index held.
func without(benches []Benchmark, held int) []Benchmark {
	out := make([]Benchmark, 0, len(benches)-1)
	for i, b := range benches {
		if i != held {
			out = append(out, b)
		}
	}
	return out
}

// savings is the mean over Targets of 1 − the cheapest strong share that
// reaches the target on b, ranking b by the raw output of weights w.
func savings(b Benchmark, w []float64) float64 {
	s := sweep.Scored{Scores: make([]float64, len(b.Features)), Outcomes: b.Outcomes()}
	for i := range b.Features {
		for j, wj := range w {
			s.Scores[i] += wj * b.Features[i][j]
		}
	}
	curve := s.Curve()
	var saved float64
	for _, frac := range Targets {
		if p, ok := sweep.Cheapest(curve, s.Target(frac)); ok {
			saved += 1 - p.Share
		}
	}
	return saved / float64(len(Targets))
}

func benchNames(benches []Benchmark) []string {
	var names []string
	for _, b := range benches {
		names = append(names, b.Set.Name)
	}
	return names
}

// quantiles returns the model's raw output at QuantileCount evenly spaced
// quantiles of the training prompts, each benchmark weighted equally.
func quantiles(m *complexity.Model, benches []Benchmark) []float64 {
	type weighted struct{ raw, w float64 }
	var all []weighted
	for _, b := range benches {
		w := 1 / float64(len(b.Features)) / float64(len(benches))
		for i := range b.Features {
			all = append(all, weighted{m.Raw(&b.Features[i]), w})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].raw < all[j].raw })
	out := make([]float64, QuantileCount)
	var cum float64
	next := 0
	for _, x := range all {
		for next < QuantileCount && float64(next)/float64(QuantileCount-1) <= cum+1e-12 {
			out[next] = x.raw
			next++
		}
		cum += x.w
	}
	for ; next < QuantileCount; next++ {
		out[next] = all[len(all)-1].raw
	}
	return out
}
