package sweep

import (
	"math"
	"sort"
)

// Outcome is the quality each model reached on one prompt.
type Outcome struct{ Weak, Strong float64 }

// Point is one operating point of a threshold router.
type Point struct {
	// Threshold sends prompts scoring at or above it to the strong model;
	// +Inf sends none.
	Threshold float64
	// Share is the share of prompts sent to the strong model: the cost in
	// strong-model calls, 0 to 1.
	Share float64
	// Quality is the mean quality of the answers the router picked.
	Quality float64
}

// Scored is one benchmark as a router sees it: a score for each prompt
// and, in the same order, what each model reached on it.
type Scored struct {
	Scores   []float64
	Outcomes []Outcome
}

// Means returns the all-weak and the all-strong quality.
func (s Scored) Means() (weak, strong float64) {
	for _, o := range s.Outcomes {
		weak += o.Weak
		strong += o.Strong
	}
	n := float64(max(len(s.Outcomes), 1))
	return weak / n, strong / n
}

// Target returns frac of the all-strong quality.
func (s Scored) Target(frac float64) float64 {
	_, strong := s.Means()
	return frac * strong
}

// Curve returns every operating point, from the threshold +Inf (share 0)
// down to the lowest score (share 1). Prompts with equal scores always go
// the same way, so ties move the share in one step.
func (s Scored) Curve() []Point {
	n := len(s.Scores)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return s.Scores[order[a]] > s.Scores[order[b]] })

	weak, _ := s.Means()
	total := weak * float64(n)
	points := []Point{{Threshold: math.Inf(1), Share: 0, Quality: weak}}
	for i := 0; i < n; {
		t := s.Scores[order[i]]
		for ; i < n && s.Scores[order[i]] == t; i++ {
			o := s.Outcomes[order[i]]
			total += o.Strong - o.Weak
		}
		points = append(points, Point{Threshold: t, Share: float64(i) / float64(n), Quality: total / float64(n)})
	}
	return points
}

// Cheapest returns the point with the lowest share whose quality reaches
// target, and false if no point does.
func Cheapest(curve []Point, target float64) (Point, bool) {
	for _, p := range curve {
		if p.Quality >= target-1e-12 {
			return p, true
		}
	}
	return Point{}, false
}

// At returns the operating point of threshold t.
func (s Scored) At(t float64) Point {
	weak, _ := s.Means()
	n := float64(max(len(s.Scores), 1))
	p := Point{Threshold: t, Quality: weak}
	for i, sc := range s.Scores {
		if sc >= t {
			o := s.Outcomes[i]
			p.Share += 1 / n
			p.Quality += (o.Strong - o.Weak) / n
		}
	}
	return p
}

// QualityAt returns the quality of the costliest point whose share does not
// exceed share: what a budget of that many strong calls buys.
func QualityAt(curve []Point, share float64) float64 {
	q := curve[0].Quality
	for _, p := range curve {
		if p.Share > share+1e-12 {
			break
		}
		q = p.Quality
	}
	return q
}

// Transfer chooses a threshold on training benchmarks for use on another:
// the highest threshold at which every training benchmark reaches frac of
// its all-strong quality. It returns -Inf (everything strong) when only
// that reaches the target everywhere.
func Transfer(train []Scored, frac float64) float64 {
	curves := make([][]Point, len(train))
	targets := make([]float64, len(train))
	var candidates []float64
	for i, s := range train {
		curves[i] = s.Curve()
		targets[i] = s.Target(frac)
		for _, p := range curves[i] {
			candidates = append(candidates, p.Threshold)
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(candidates)))
	for _, t := range candidates {
		ok := true
		for i, c := range curves {
			if qualityAtThreshold(c, t) < targets[i]-1e-12 {
				ok = false
				break
			}
		}
		if ok {
			return t
		}
	}
	return math.Inf(-1)
}

// qualityAtThreshold reads a curve (thresholds descending) at threshold t:
// the point with the lowest threshold still at or above t.
func qualityAtThreshold(curve []Point, t float64) float64 {
	i := sort.Search(len(curve), func(i int) bool { return curve[i].Threshold < t })
	return curve[i-1].Quality
}

// RandomShare is the expected share a random router needs to reach frac of
// the all-strong quality: (frac·S − W)/(S − W), clamped to [0, 1].
func (s Scored) RandomShare(frac float64) float64 {
	weak, strong := s.Means()
	if strong <= weak {
		return 0
	}
	return math.Min(1, math.Max(0, (frac*strong-weak)/(strong-weak)))
}

// RandomAt is a random router's expected point at a given share.
func (s Scored) RandomAt(share float64) Point {
	weak, strong := s.Means()
	return Point{Threshold: math.NaN(), Share: share, Quality: weak + share*(strong-weak)}
}

// APGR is the average performance gap recovered over the whole curve
// (RouteLLM's metric): at strong shares 0, 1/steps, …, 1, the share of the
// gap between the all-weak and the all-strong quality that a budget of
// that many strong calls recovers, averaged. A random router scores 0.5,
// an oracle close to 1. It is 0 when the two models are equally good.
func (s Scored) APGR(steps int) float64 {
	weak, strong := s.Means()
	if strong == weak {
		return 0
	}
	// One walk along the curve: QualityAt at each share, in order.
	curve := s.Curve()
	sum, j := 0.0, 0
	for i := 0; i <= steps; i++ {
		share := float64(i) / float64(steps)
		for j+1 < len(curve) && curve[j+1].Share <= share+1e-12 {
			j++
		}
		sum += (curve[j].Quality - weak) / (strong - weak)
	}
	return sum / float64(steps+1)
}

// Resample draws len(s) prompts of s with replacement, with the indices
// pick returns: one bootstrap replicate.
func (s Scored) Resample(pick func(n int) int) Scored {
	n := len(s.Scores)
	out := Scored{Scores: make([]float64, n), Outcomes: make([]Outcome, n)}
	for i := range n {
		j := pick(n)
		out.Scores[i], out.Outcomes[i] = s.Scores[j], s.Outcomes[j]
	}
	return out
}
