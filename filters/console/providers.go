package console

import (
	"context"

	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/probe"
)

// providersView is the Providers page's.
type providersView struct {
	// Monitored is false in a process without a health monitor.
	Monitored bool
	Providers []providerCard
}

// providerCard is one provider's health and, when its capabilities are
// probed, what the probes found: a capability the probes find failing
// has requests that need it routed elsewhere.
type providerCard struct {
	health.ProviderStatus
	Probes *probe.Record
}

// providers reads the health monitor (each provider's and model's state,
// breaker, canary and window, and whether a drill holds it down) and the
// capability probes' board.
func (f *Filter) providers(context.Context, *call) (any, error) {
	if f.health == nil {
		return &providersView{}, nil
	}
	probed := map[string]*probe.Record{}
	if f.probes != nil {
		for _, r := range f.probes() {
			probed[r.Provider] = &r
		}
	}
	v := &providersView{Monitored: true}
	for _, st := range f.health.Snapshot() {
		v.Providers = append(v.Providers, providerCard{ProviderStatus: st, Probes: probed[st.Provider]})
	}
	return v, nil
}
