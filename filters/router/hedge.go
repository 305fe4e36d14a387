package router

import (
	"strconv"
	"time"

	"github.com/switchyard/switchyard/filters"
)

// HeaderHedge tells the client of a hedged request when its second
// attempt was due, how many attempts ran and which one answered:
// "after=800ms; attempts=2; won=2".
const HeaderHedge = "x-switchyard-hedge"

// hedge decides whether x's plan is raced: on a route that hedges, when
// the plan's second target is on another provider than the first (the
// provider is what is slow, and what names the winner) and the delay is
// known (a fixed one, or the first target's p95 time to response headers
// once the health window has enough samples).
func (f *Filter) hedge(x *filters.Exchange) *filters.Hedge {
	h := f.router.route.Hedge
	if h == nil || len(x.Plan) < 2 || x.Plan[0].Provider() == x.Plan[1].Provider() {
		return nil
	}
	after := h.After
	if h.P95 {
		if f.health == nil {
			return nil
		}
		first := x.Plan[0].Model
		p95, ok := f.health.LatencyP95(first.Provider.Name, first.Series(), false)
		if !ok {
			return nil
		}
		// Envoy counts the per-try timeout in whole milliseconds.
		after = max(p95.Round(time.Millisecond), time.Millisecond)
	}
	return &filters.Hedge{After: after}
}

// hedgeHeader is the value of [HeaderHedge] for x's answer.
func hedgeHeader(x *filters.Exchange) string {
	won := 0
	if a := x.LastAttempt(); a != nil {
		won = a.N
	}
	return "after=" + x.Hedge.After.String() + "; attempts=" + strconv.Itoa(x.AttemptCount()) + "; won=" + strconv.Itoa(won)
}
