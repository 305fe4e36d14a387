package console

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/ledger"
)

// routingWindow is how far back the Routing page sums verdicts and
// savings.
const routingWindow = 24 * time.Hour

// routingView is the Routing page's.
type routingView struct {
	Since  time.Time
	Routes []routeView
}

// routeView is one auto route: what its policy asks, the strong share in
// force, and per tenant what its traffic delivered.
type routeView struct {
	Name string
	Path string
	Auto policy.Auto
	// Tracked is false when no calibrator follows the route (a process
	// without one), and then only the policy is known.
	Tracked bool
	// Share is the route's strong share in force: the target's, or where
	// feedback moved it.
	Share   float64
	Tenants []tenantRouting
}

// tenantRouting is one tenant's routing on a route.
type tenantRouting struct {
	Tenant string
	// Share is the strong share in force for the tenant; Own is set when
	// the tenant's own ratings set it rather than the route's.
	Share float64
	Own   bool
	// Threshold is the complexity score from which a request goes to a
	// strong model, and From whose traffic it was read from (tenant,
	// route, or the classifier's prior).
	Threshold float64
	From      string
	// Q sums the tenant's ledger rows on the route over the window.
	Q      ledger.Quality
	Models []ledger.Quality
}

// routing shows every auto route of the policy (routing.auto): its
// target and strong share, and per tenant the share in force, the
// verdicts its answers got and what auto routing saved against sending
// every request to the strongest model.
func (f *Filter) routing(ctx context.Context, c *call) (any, error) {
	v := &routingView{Since: f.now().Add(-routingWindow)}
	rows, err := f.usage.Quality(ctx, ledger.Filter{From: v.Since})
	if err != nil {
		return nil, err
	}
	for _, r := range c.x.Policy.Routes {
		a := r.Routing.Auto
		if a == nil {
			continue
		}
		rv := routeView{Name: r.Name, Path: r.Path, Auto: *a, Share: a.StrongShare}
		byTenant := map[string]*tenantRouting{}
		tenant := func(name string) *tenantRouting {
			if byTenant[name] == nil {
				byTenant[name] = &tenantRouting{Tenant: name, Share: rv.Share}
			}
			return byTenant[name]
		}
		own := map[string]float64{}
		if f.cal != nil {
			if sh, ok := f.cal.Shares(r.Name); ok {
				rv.Tracked, rv.Share, own = true, sh.Route, sh.Tenants
			}
		}
		for name := range own {
			tenant(name)
		}
		for _, q := range rows.Data {
			if q.Route != r.Name {
				continue
			}
			t := tenant(q.Tenant)
			t.Models = append(t.Models, q.Quality)
			t.Q = addQuality(t.Q, q.Quality)
		}
		for _, t := range byTenant {
			t.Share = rv.Share
			if s, ok := own[t.Tenant]; ok {
				t.Share, t.Own = s, true
			}
			if rv.Tracked {
				t.Threshold, t.From = f.cal.Threshold(r.Name, t.Tenant, t.Share, a.MinSamples)
			}
			rv.Tenants = append(rv.Tenants, *t)
		}
		slices.SortFunc(rv.Tenants, func(a, b tenantRouting) int { return cmp.Compare(a.Tenant, b.Tenant) })
		v.Routes = append(v.Routes, rv)
	}
	return v, nil
}

// addQuality sums two models' figures, the means weighted by their
// counts.
func addQuality(a, b ledger.Quality) ledger.Quality {
	mean := func(m1 float64, n1 int64, m2 float64, n2 int64) float64 {
		if n1+n2 == 0 {
			return 0
		}
		return (m1*float64(n1) + m2*float64(n2)) / float64(n1+n2)
	}
	a.MeanScore = mean(a.MeanScore, a.Ratings, b.MeanScore, b.Ratings)
	a.MeanJudged = mean(a.MeanJudged, a.Judged, b.MeanJudged, b.Judged)
	a.Requests += b.Requests
	a.Auto += b.Auto
	a.AutoCostMicros += b.AutoCostMicros
	a.StrongCostMicros += b.StrongCostMicros
	a.Ratings += b.Ratings
	a.Judged += b.Judged
	return a
}
