package health

import (
	"sort"
	"time"
)

// Unreachable says since when, and why, the gateway has not reached a
// provider at all.
type Unreachable struct {
	Since time.Time `json:"since"`
	// Reason is the last failure's: "DNS: api.openai.com resolved to no
	// address", "connect: 203.0.113.7:443: connection refused", "TLS: ...".
	Reason string `json:"reason"`
	// NoAddress is set when that failure was the provider's name
	// resolving to no address.
	NoAddress bool `json:"no_address,omitempty"`
}

// reached notes how an attempt or check of the provider ended: one that
// got no response for a reason below HTTP makes the provider unreachable
// (since the first of a run of them), anything that answered makes it
// reachable. A timeout, a reset or a refusal by the gateway itself says
// nothing of reachability, so it leaves the state as it was.
func (p *provider) reached(failed bool, status int, how Outcome, why string, now time.Time) {
	switch {
	case status != 0 || !failed:
		p.unreachable = nil
	case (how == ConnectFailure || how == NoAddress) && why != "":
		if p.unreachable == nil {
			p.unreachable = &Unreachable{Since: now}
		}
		p.unreachable.Reason, p.unreachable.NoAddress = why, how == NoAddress
	}
}

// UnreachableProvider is a provider the gateway cannot reach, for the
// readiness probe.
type UnreachableProvider struct {
	Provider string
	Unreachable
}

// Unreachable lists, by name, the providers the gateway cannot reach.
func (m *Monitor) Unreachable() []UnreachableProvider {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []UnreachableProvider
	for name, p := range m.providers {
		if p.unreachable != nil {
			out = append(out, UnreachableProvider{Provider: name, Unreachable: *p.unreachable})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	return out
}
