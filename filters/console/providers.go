package console

import (
	"context"

	"github.com/switchyard/switchyard/state/health"
)

// providersView is the Providers page's.
type providersView struct {
	// Monitored is false in a process without a health monitor.
	Monitored bool
	Providers []health.ProviderStatus
}

// providers reads the health monitor: each provider's and model's state,
// breaker, canary and window, and whether a drill holds it down.
func (f *Filter) providers(context.Context, *call) (any, error) {
	if f.health == nil {
		return &providersView{}, nil
	}
	return &providersView{Monitored: true, Providers: f.health.Snapshot()}, nil
}
