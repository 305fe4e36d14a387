package router

import (
	"math"
	"slices"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/router/complexity"
)

// unknownLatency ranks a model nobody has measured yet behind measured
// ones that are reasonably fast, but ahead of slow ones.
const unknownLatencySeconds = 2.0

// strategy is the tenant's override or the route's strategy.
func (r *Router) strategy(q *Query) policy.Strategy {
	if q.Tenant != nil && q.Tenant.Strategy != "" {
		return q.Tenant.Strategy
	}
	return r.route.Routing.Strategy
}

func (r *Router) weights(q *Query) policy.Weights {
	if q.Tenant != nil && q.Tenant.Weights != nil {
		return *q.Tenant.Weights
	}
	return r.route.Routing.Weights
}

// rank orders the candidates by the strategy, best first, with scores in
// [0,1]. Health weights (degraded models) and budget pressure scale the
// scores, so a degraded model falls behind healthy ones of similar merit.
func (r *Router) rank(q *Query, s *signals, pool []*policy.Model) []Scored {
	if len(pool) == 0 {
		return nil
	}
	maxPrice, maxLat := 0.0, 0.0
	lat := make([]float64, len(pool))
	for i, m := range pool {
		maxPrice = math.Max(maxPrice, pricePerMTok(m))
		lat[i] = unknownLatencySeconds
		if r.health != nil {
			if p95, ok := r.latencyP95(m, q.Chat.Stream); ok {
				lat[i] = p95
			}
		}
		maxLat = math.Max(maxLat, lat[i])
	}
	norm := func(v, maxV float64) float64 {
		if maxV == 0 {
			return 0
		}
		return v / maxV
	}
	st := r.strategy(q)
	var level complexity.Level
	var cscore float64
	if st == policy.CostOptimized || st == policy.Weighted {
		cscore, level = s.complexity()
	}
	floor := qualityFloor(pool, level)
	w := r.weights(q)
	var prev string
	if r.sticky != nil && q.User != "" {
		prev, _ = r.sticky.Get(r.route.Name, tenantName(q.Tenant), q.User)
	}
	out := make([]Scored, len(pool))
	for i, m := range pool {
		cost := norm(pricePerMTok(m), maxPrice)
		var score float64
		switch st {
		case policy.QualityFirst:
			score = 0.9*m.Quality + 0.1*(1-cost)
		case policy.LatencyFirst:
			score = 0.9*(1-norm(lat[i], maxLat)) + 0.1*(1-cost)
		case policy.Weighted:
			match := 1 - math.Abs(m.Quality-cscore)
			consistency := 0.0
			if m.Name == prev {
				consistency = 1
			}
			health := 1.0
			if r.health != nil {
				health = r.healthWeight(m, q.Hash)
			}
			total := w.Cost + w.Latency + w.Quality + w.Health + w.Match + w.Consistency
			score = (w.Cost*(1-cost) + w.Latency*(1-norm(lat[i], maxLat)) + w.Quality*m.Quality +
				w.Health*health + w.Match*match + w.Consistency*consistency) / total
		default: // cost-optimized: the cheapest model good enough for the level
			if m.Quality >= floor {
				score = 0.5 + 0.5*(1-cost)
			} else {
				score = 0.5 * m.Quality
			}
		}
		if st != policy.Weighted && r.health != nil {
			score *= r.healthWeight(m, q.Hash)
		}
		if q.Pressure == PressureHigh && !m.Cheap {
			score *= 0.5
		}
		out[i] = Scored{Model: m, Score: score}
	}
	slices.SortStableFunc(out, func(a, b Scored) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out
}

// qualityFloor is the least quality a level asks for: anything for simple
// requests, the better half for medium ones, the best available for
// complex ones.
func qualityFloor(pool []*policy.Model, level complexity.Level) float64 {
	lo, hi := 1.0, 0.0
	for _, m := range pool {
		lo, hi = math.Min(lo, m.Quality), math.Max(hi, m.Quality)
	}
	switch level {
	case complexity.Complex:
		return hi
	case complexity.Medium:
		return lo + (hi-lo)/2
	default:
		return 0
	}
}
