package router

import (
	"cmp"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/switchyard/switchyard/configs/policy"
)

// spread orders the deployments of model m for one request by the
// model's balance. Every deployment is listed, so that a request whose
// first deployment fails is retried on a sibling before the plan moves on
// to the next model; admit still skips the unavailable ones.
//
// The order starts as a draw by weight without replacement (a standby,
// of weight 0, after every weighted deployment), seeded by the request:
// the same request always gets the same order, and over many requests
// each deployment comes first in proportion to its weight times its
// health weight. least_in_flight and health then sort that order stably,
// so the draw breaks their ties.
func (r *Router) spread(m *policy.Model, key uint64, stream bool) []*policy.Model {
	if len(m.Deployments) < 2 {
		return []*policy.Model{m}
	}
	type entry struct {
		d      *policy.Model
		weight float64 // the draw's: policy weight × health weight
		health float64
	}
	es := make([]entry, len(m.Deployments))
	for i, d := range m.Deployments {
		h := 1.0
		if r.health != nil {
			h = r.health.Admit(d.Provider.Name, d.Series(), key).Weight
		}
		es[i] = entry{d: d, weight: float64(d.Weight) * h, health: h}
	}
	// The request's key drives canary shares (key % 1000) and splits (key
	// % 100); the draw mixes in the model's name so that it is independent
	// of them and of other models' draws.
	h := fnv.New64a()
	_, _ = h.Write([]byte(m.Name))
	rng := rand.New(rand.NewPCG(key, h.Sum64()))
	out := make([]*policy.Model, 0, len(es))
	health := make(map[*policy.Model]float64, len(es))
	for len(es) > 0 {
		total := 0.0
		for _, e := range es {
			total += e.weight
		}
		i := 0
		if total > 0 {
			x := rng.Float64() * total
			for i = 0; i < len(es)-1 && x >= es[i].weight; i++ {
				x -= es[i].weight
			}
			for es[i].weight == 0 { // x landed past the last weighted entry by rounding
				i--
			}
		}
		out = append(out, es[i].d)
		health[es[i].d] = es[i].health
		es = slices.Delete(es, i, i+1)
	}
	switch {
	case r.health == nil:
	case m.Balance == policy.BalanceLeastInFlight:
		slices.SortStableFunc(out, func(a, b *policy.Model) int {
			return cmp.Compare(r.health.InFlight(a.Provider.Name, a.Series()), r.health.InFlight(b.Provider.Name, b.Series()))
		})
	case m.Balance == policy.BalanceHealth:
		slices.SortStableFunc(out, func(a, b *policy.Model) int {
			if c := cmp.Compare(health[b], health[a]); c != 0 {
				return c
			}
			return cmp.Compare(r.latency(a, stream), r.latency(b, stream))
		})
	}
	return out
}

// latency is a deployment's observed p95 in seconds (of the time to first
// token for a stream), or unknownLatencySeconds before it has enough
// samples.
func (r *Router) latency(d *policy.Model, stream bool) float64 {
	if p95, ok := r.health.LatencyP95(d.Provider.Name, d.Series(), stream); ok {
		return p95.Seconds()
	}
	return unknownLatencySeconds
}

// The strategies rank models, not deployments: a model is as healthy as
// its healthiest deployment, as fast as its fastest measured one, and
// costs what its deployments cost on average, by weight.

// healthWeight is the best health weight among m's deployments.
func (r *Router) healthWeight(m *policy.Model, key uint64) float64 {
	best := 0.0
	for _, d := range m.Deployments {
		best = math.Max(best, r.health.Admit(d.Provider.Name, d.Series(), key).Weight)
	}
	return best
}

// latencyP95 is the least p95 measured among m's deployments.
func (r *Router) latencyP95(m *policy.Model, stream bool) (float64, bool) {
	best, found := 0.0, false
	for _, d := range m.Deployments {
		if p95, ok := r.health.LatencyP95(d.Provider.Name, d.Series(), stream); ok && (!found || p95.Seconds() < best) {
			best, found = p95.Seconds(), true
		}
	}
	return best, found
}

// pricePerMTok is what a typical request costs on m: input and output
// weighed 3:1, as chat traffic roughly is, averaged over its deployments
// by weight (standbys count only when every deployment is one).
func pricePerMTok(m *policy.Model) float64 {
	var sum, weights float64
	for _, d := range m.Deployments {
		sum += float64(d.Weight) * float64(3*d.Price.InputPerMTok+d.Price.OutputPerMTok) / 4
		weights += float64(d.Weight)
	}
	if weights == 0 {
		return float64(3*m.Price.InputPerMTok+m.Price.OutputPerMTok) / 4
	}
	return sum / weights
}
