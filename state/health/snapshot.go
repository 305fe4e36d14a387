package health

import (
	"sort"
	"time"
)

// ProviderStatus is what the monitor knows of one provider, for
// GET /admin/providers.
type ProviderStatus struct {
	Provider string `json:"provider"`
	// State is unavailable during a drill or while the breaker is not
	// closed, healthy otherwise; quality is judged per model.
	State  State     `json:"state"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
	Drill  bool      `json:"drill"`
	// Canary is the provider's canary, nil when there is none.
	Canary  *CanaryStatus `json:"canary,omitempty"`
	Breaker BreakerStatus `json:"breaker"`
	// Stats sum the window of every model of the provider (quota aside:
	// quotas are per model).
	Stats Stats `json:"stats"`
	// LastSuccess is when an attempt or an active check last succeeded;
	// LastCheck is the last active check, nil before the first.
	LastSuccess time.Time    `json:"last_success,omitzero"`
	LastCheck   *CheckStatus `json:"last_check,omitempty"`
	// Unreachable is set while the gateway cannot reach the provider at
	// all: its last attempt or check failed below HTTP (DNS, connect,
	// TLS) and none has succeeded since.
	Unreachable *Unreachable  `json:"unreachable,omitempty"`
	Models      []ModelStatus `json:"models"`
}

// ModelStatus is what the monitor knows of one model of a provider.
type ModelStatus struct {
	Model string `json:"model"`
	// State is the model's own state; the model is routed only when its
	// provider is not unavailable either.
	State  State     `json:"state"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
	// HeldUntil is when a model whose canary failed may try again.
	HeldUntil time.Time     `json:"held_until,omitzero"`
	Canary    *CanaryStatus `json:"canary,omitempty"`
	// Share is the share of its requests the model's canary and its
	// provider's together admit: 1 without a canary.
	Share float64 `json:"share"`
	Stats Stats   `json:"stats"`
}

// Snapshot returns every provider and model the monitor knows, sorted by
// name, judged at the current time.
func (m *Monitor) Snapshot() []ProviderStatus {
	m.mu.Lock()
	now := m.now()
	m.evalAll(now)
	r := &m.cfg.Recovery
	out := make([]ProviderStatus, 0, len(m.providers))
	for _, p := range m.providers {
		p.window.advance(p.window.epochOf(m.age(now)))
		ps := ProviderStatus{
			Provider: p.name,
			State:    p.status.state,
			Reason:   p.status.reason,
			Since:    p.status.since,
			Drill:    m.drills.on(p.name),
			Canary:   p.status.canary.status(r),
			Breaker:  p.breaker.status(),
			Stats:    p.window.stats(),
			Models:   make([]ModelStatus, 0, len(p.models)),

			LastSuccess: p.lastSuccess,
		}
		if !p.lastCheck.At.IsZero() {
			c := p.lastCheck
			ps.LastCheck = &c
		}
		if u := p.unreachable; u != nil {
			c := *u
			ps.Unreachable = &c
		}
		for _, md := range p.models {
			ps.Models = append(ps.Models, ModelStatus{
				Model:     md.name,
				State:     md.status.state,
				Reason:    md.status.reason,
				Since:     md.status.since,
				HeldUntil: heldUntil(md, now),
				Canary:    md.status.canary.status(r),
				Share:     min(p.status.canary.share(r), md.status.canary.share(r)),
				Stats:     m.judge(md, now).stats,
			})
		}
		sort.Slice(ps.Models, func(i, j int) bool { return ps.Models[i].Model < ps.Models[j].Model })
		out = append(out, ps)
	}
	m.unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	return out
}

func heldUntil(md *model, now time.Time) time.Time {
	if now.Before(md.heldUntil) {
		return md.heldUntil
	}
	return time.Time{}
}
