package admin

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/manage"
)

// domainRoutes are what routes that learn domain priors know of each
// tenant's domains ([manage.Domains], [manage.ResetDomain]).
func (f *Filter) domainRoutes() map[string]handler {
	return map[string]handler{
		"GET domains":      f.listDomains,
		"DELETE domains/*": f.resetDomain,
	}
}

// listDomains answers GET /admin/domains[?route=&tenant=].
func (f *Filter) listDomains(_ context.Context, x *filters.Exchange, _ string) (int, any, error) {
	q, _ := url.ParseQuery(x.Query)
	ds, err := manage.Domains(f.learn, q.Get("route"), q.Get("tenant"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"object": "list", "data": ds}, nil
}

// resetDomain answers DELETE /admin/domains/{fingerprint}?route=&tenant=&app=:
// the domain starts again from the prior, on every replica.
func (f *Filter) resetDomain(ctx context.Context, x *filters.Exchange, domain string) (int, any, error) {
	q, _ := url.ParseQuery(x.Query)
	route, tenant, app := q.Get("route"), q.Get("tenant"), q.Get("app")
	if err := manage.ResetDomain(ctx, f.learn, route, tenant, app, domain); err != nil {
		return 0, nil, err
	}
	f.audit(ctx, x, "domain.reset", slog.String("route", route), slog.String("tenant", tenant), slog.String("app", app), slog.String("domain", domain))
	return http.StatusOK, map[string]any{"object": "domain", "route": route, "tenant": tenant, "app": app, "domain": domain, "reset": true}, nil
}
