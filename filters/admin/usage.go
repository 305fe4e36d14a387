package admin

import (
	"context"
	"net/http"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/ledger/report"
)

// usageRoutes are the admin usage API: GET /admin/usage/by-tenant,
// by-app (per tenant and app), by-model, by-tag?key= and by-session (per
// tenant and the tag's value or the session), each with the from, to,
// tenant, app, model, session and tag filters of [report.ParseQuery].
func usageRoutes(deps filters.Deps) map[string]handler {
	src := report.Source{Writer: deps.Ledger, Ledger: deps.Usage}
	by := func(dims ...ledger.Dimension) handler {
		return func(ctx context.Context, x *filters.Exchange, _ string) (int, any, error) {
			f, err := report.ParseQuery(x.Query)
			if err != nil {
				return 0, nil, err
			}
			rep, err := src.Report(ctx, f, dims...)
			if err != nil {
				return 0, nil, err
			}
			return http.StatusOK, rep, nil
		}
	}
	byTag := func(ctx context.Context, x *filters.Exchange, _ string) (int, any, error) {
		f, key, err := report.ParseTagQuery(x.Query)
		if err != nil {
			return 0, nil, err
		}
		rep, err := src.Report(ctx, f, ledger.ByTenant, ledger.ByTag(key))
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, rep, nil
	}
	return map[string]handler{
		"GET usage/by-tenant":  by(ledger.ByTenant),
		"GET usage/by-app":     by(ledger.ByTenant, ledger.ByApp),
		"GET usage/by-model":   by(ledger.ByModel),
		"GET usage/by-tag":     byTag,
		"GET usage/by-session": by(ledger.ByTenant, ledger.BySession),
	}
}
