package health

import (
	"log/slog"
	"slices"
	"time"
)

// Outage is a provider's breaker opening on this replica: what the other
// replicas need to hear so that they stop sending it traffic too.
type Outage struct {
	Provider string
	// Reason says why the breaker opened ("5 consecutive failures").
	Reason string
	At     time.Time
}

// OnOutage sets the function told of every breaker that opens on this
// replica's own evidence (attempts and active checks, not [Monitor.Report]),
// so that it can be shared. It is called after the monitor's lock is
// released, in the goroutine that observed the failure: it must not block.
func (m *Monitor) OnOutage(fn func(Outage)) {
	m.mu.Lock()
	m.outageHook = fn
	m.mu.Unlock()
}

// Report applies an outage another replica saw: the provider's breaker
// opens (a half-open one opens again) for Breaker.OpenTimeout, then
// recovers through its own probes like any other. It is never passed to
// the OnOutage hook, so replicas do not echo each other's reports. A
// provider the policy does not name is ignored, since names read from a
// shared store must not create entries. It reports whether the breaker
// opened.
func (m *Monitor) Report(provider, reason string) bool {
	m.mu.Lock()
	p := m.providers[provider]
	if p == nil {
		m.unlock()
		return false
	}
	now := m.now()
	m.evalProvider(p, now)
	opened := p.breaker.state != BreakerOpen
	if opened {
		p.breaker.open(now, reason)
		m.evalProvider(p, now)
	}
	m.unlock()
	return opened
}

// breakerMark is a breaker's state before an update, to tell whether the
// update opened it.
type breakerMark struct {
	state BreakerState
	since time.Time
}

func mark(b *breaker) breakerMark { return breakerMark{b.state, b.since} }

// noteOpened queues an Outage when the breaker opened since mark was taken.
func (m *Monitor) noteOpened(p *provider, was breakerMark, now time.Time) {
	b := p.breaker
	if b.state != BreakerOpen || (was.state == BreakerOpen && was.since.Equal(b.since)) || m.outageHook == nil {
		return
	}
	m.outages = append(m.outages, Outage{Provider: p.name, Reason: b.reason, At: now})
}

// CheckResult is the outcome of one active check of a provider: a cheap
// call (such as listing models) made because the provider got no traffic.
type CheckResult struct {
	Provider string
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Failure says why no response arrived; Responded when one did.
	Failure Outcome
	Latency time.Duration
	// Error describes a failure without a status; it must hold no secret.
	Error string
}

// Failed reports whether the check counts against the provider, by the
// rule of [Observation.Failed].
func (c CheckResult) Failed() bool {
	return Observation{Status: c.Status, Failure: c.Failure}.Failed()
}

// CheckStatus is the last active check of a provider, for the snapshot.
type CheckStatus struct {
	At      time.Time `json:"at"`
	OK      bool      `json:"ok"`
	Status  int       `json:"status,omitempty"`
	Latency Duration  `json:"latency"`
	Error   string    `json:"error,omitempty"`
}

// Due lists, sorted, the providers that neither served an attempt nor were
// checked for every, and are not in a fault drill: the ones an active
// check should look at now.
func (m *Monitor) Due(every time.Duration) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out []string
	for name, p := range m.providers {
		if m.drills.on(name) || now.Sub(p.lastTraffic) < every || now.Sub(p.lastCheck.At) < every {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Check records an active check. It counts in the provider's breaker like
// an attempt: failures trip a closed breaker, and a half-open breaker
// takes it as a probe when a slot is free, so a provider that gets no
// traffic still closes its breaker when it comes back. It never touches a
// model's window: a check says nothing of a model's latency or quota. A
// provider the monitor does not know is ignored.
func (m *Monitor) Check(r CheckResult) {
	if r.Failure == Canceled {
		return
	}
	failed := r.Failed()
	m.mu.Lock()
	p := m.providers[r.Provider]
	if p == nil {
		m.unlock()
		return
	}
	now := m.now()
	m.evalProvider(p, now)
	was, canary, prev := mark(p.breaker), p.status.canary.active, p.lastCheck
	p.lastCheck = CheckStatus{At: now, OK: !failed, Status: r.Status, Latency: Duration(r.Latency), Error: r.Error}
	if !failed {
		p.lastSuccess = now
	}
	p.reached(failed, r.Status, r.Failure, r.Error, now)
	// A check holds its own probe slot, under a key no request hashes to
	// twice in a row: the check's time.
	key := uint64(now.UnixNano())
	if p.breaker.state != BreakerHalfOpen || p.breaker.probe(key, now) {
		p.breaker.observe(key, failed, now)
	}
	if failed && canary {
		p.breaker.trip(now, "active check failed during canary")
	}
	m.noteOpened(p, was, now)
	m.evalProvider(p, now)
	if failed && (prev.OK || prev.At.IsZero()) { // once per run of failures
		m.note(slog.LevelWarn, "provider check failed", slog.String("provider", p.name),
			slog.Int("status", r.Status), slog.String("error", r.Error))
	}
	m.unlock()
}
