package admin

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/manage"
)

// providers answers GET /admin/providers: every provider's health state,
// breaker state, canary step and the numbers behind them.
func (f *Filter) providers(_ context.Context, _ *filters.Exchange, _ string) (int, any, error) {
	if f.health == nil {
		return 0, nil, filters.Reject(http.StatusServiceUnavailable, openaiapi.TypeServer, "health_unavailable", "this gateway runs no health monitor")
	}
	return http.StatusOK, map[string]any{"object": "list", "data": f.health.Snapshot()}, nil
}

type faultRequest struct {
	Provider string `json:"provider"`
}

// fault answers POST /admin/fault/down and /admin/fault/up: routing treats
// a provider (or "all") as down without touching it, on every replica.
func (f *Filter) fault(down bool) handler {
	return func(ctx context.Context, x *filters.Exchange, _ string) (int, any, error) {
		var req faultRequest
		if err := decode(x, &req); err != nil {
			return 0, nil, err
		}
		if err := manage.SetDrill(ctx, x.Policy, f.store, f.health, req.Provider, down); err != nil {
			return 0, nil, err
		}
		action := "fault.up"
		if down {
			action = "fault.down"
		}
		f.audit(ctx, x, action, slog.String("provider", req.Provider))
		return http.StatusOK, map[string]any{"provider": req.Provider, "down": down}, nil
	}
}
