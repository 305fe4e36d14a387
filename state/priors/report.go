package priors

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
)

// DomainReport is what a route learnt of one domain, for GET
// /v1/usage/quality and the admin API. Counts are recent: decayed with
// the route's half-life, over every replica, as of the last refresh.
type DomainReport struct {
	Route  string `json:"route"`
	Tenant string `json:"tenant"`
	App    string `json:"app"`
	// Domain is the fingerprint of the app's system prompt (16 hex
	// digits; all zeros for requests without one): with the route,
	// tenant and app, it names the domain to reset.
	Domain   string  `json:"domain"`
	Requests float64 `json:"requests"`
	// StrongShare is the share of its requests routed to the strong
	// tier.
	StrongShare float64 `json:"strong_share"`
	Verdicts    float64 `json:"verdicts"`
	// EstimatedQuality is the estimated mean verdict of the domain's
	// weak answers for a request of average complexity (1: as good as
	// the strong model's), Uncertainty its relative standard deviation.
	EstimatedQuality float64 `json:"estimated_quality"`
	Uncertainty      float64 `json:"uncertainty"`
	// Shift is what the domain adds to its requests' complexity scores;
	// Mode sums it up (prior, shifted, strong, weak).
	Shift float64 `json:"shift"`
	Mode  string  `json:"mode"`
}

// Report lists the domains of tenant ("" for every tenant) on route (""
// for every learning route), busiest first.
func (l *Learner) Report(route, tenantName string) []DomainReport {
	l.mu.RLock()
	routes := make([]*Route, 0, len(l.routes))
	for name, r := range l.routes {
		if route == "" || name == route {
			routes = append(routes, r)
		}
	}
	l.mu.RUnlock()
	var out []DomainReport
	for _, r := range routes {
		cfg := r.cfg.Load()
		r.mu.RLock()
		var tenants []*tenant
		for name, t := range r.tenants {
			if tenantName == "" || name == tenantName {
				tenants = append(tenants, t)
			}
		}
		r.mu.RUnlock()
		for _, t := range tenants {
			t.mu.RLock()
			for _, d := range t.domains {
				out = append(out, d.report(r.name, t.name, cfg))
			}
			t.mu.RUnlock()
		}
	}
	slices.SortFunc(out, func(a, b DomainReport) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Route, b.Route), cmp.Compare(a.Tenant, b.Tenant),
			cmp.Compare(a.App, b.App), cmp.Compare(a.Domain, b.Domain))
	})
	return out
}

func (d *Domain) report(route, tenant string, cfg *routeConfig) DomainReport {
	d.mu.Lock()
	ev, f := d.merged, d.factor
	d.mu.Unlock()
	shift := d.Shift()
	r := DomainReport{
		Route: route, Tenant: tenant, App: d.key.App, Domain: d.key.Hex(),
		Requests: round(ev[sumRequests]), Verdicts: round(ev[sumVerdicts]),
		EstimatedQuality: round(min(max(1-cfg.m.base*f, 0), 1)),
		Uncertainty:      round(uncertainty(cfg.PriorWeight, ev[sumExposure])),
		Shift:            round(shift), Mode: modeOf(ev[sumVerdicts], shift),
	}
	if ev[sumRequests] > 0 {
		r.StrongShare = round(ev[sumStrong] / ev[sumRequests])
	}
	return r
}

func round(x float64) float64 { return math.Round(x*1000) / 1000 }

// ErrNotLearning is Reset's answer for a route that does not learn.
var ErrNotLearning = errors.New("the route does not learn domain priors")

// Reset forgets what route learnt of a tenant's domain, on every
// replica: the board's entry goes now, and each replica's copy at its
// next refresh. The domain starts again from the prior.
func (l *Learner) Reset(ctx context.Context, route, tenantName string, k Key) error {
	r := l.route(route)
	if r == nil {
		return ErrNotLearning
	}
	if err := l.board.DropTallies(ctx, series(route, nameOr(tenantName)), []string{k.name()}); err != nil {
		return err
	}
	if t := r.tenant(tenantName, false); t != nil {
		t.mu.RLock()
		d := t.domains[k]
		t.mu.RUnlock()
		if d != nil {
			d.mu.Lock()
			d.merged, d.pending, d.factor = [numSums]float64{}, [numSums]float64{}, 1
			d.mu.Unlock()
			d.shift.Store(0)
		}
	}
	return nil
}
