package policy

import (
	"time"

	"go.yaml.in/yaml/v3"
)

// HedgeSpec asks a route to hedge: when the first attempt has not
// answered (response headers) within After, a second attempt goes to the
// next target of the plan while the first keeps running, and the first
// answer wins; the other is cancelled.
type HedgeSpec struct {
	// After is a duration ("800ms") or p95: the first target's 95th
	// percentile time to response headers, from the health window (no
	// hedge until the window holds min_samples timed attempts).
	After HedgeAfter `yaml:"after"`
	// Max is how many hedged attempts may run beside the first: 1.
	Max int `yaml:"max"`
}

// HedgeAfter is a hedge's delay: a duration, or p95.
type HedgeAfter struct {
	D   time.Duration
	P95 bool
}

// UnmarshalYAML implements [yaml.Unmarshaler].
func (h *HedgeAfter) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "p95" {
		*h = HedgeAfter{P95: true}
		return nil
	}
	var d Duration
	if err := d.UnmarshalYAML(n); err != nil {
		return errAt(n, "must be a duration such as 800ms, or p95; got %q", n.Value)
	}
	*h = HedgeAfter{D: time.Duration(d)}
	return nil
}

// Hedge is a route's compiled hedge.
type Hedge struct {
	// After is the fixed delay; zero when P95 is set.
	After time.Duration
	// P95 takes the delay from the first target's p95 time to response
	// headers.
	P95 bool
}

// Bounds of a hedge's delay: below minHedgeAfter a hedge doubles nearly
// every request; at the per-try idle timeout the attempt fails over
// anyway.
const minHedgeAfter = 10 * time.Millisecond

// hedgeAPIs are the APIs a route may hedge: answers a provider writes.
// A token count costs nothing to wait for.
var hedgeAPIs = map[API]bool{APIChatCompletions: true, APIMessages: true, APIResponses: true, APIEmbeddings: true}

// hedge compiles a route's hedge, nil when it has none.
func (c *compiler) hedge(src source, d string, s *HedgeSpec, r *Route) (*Hedge, bool) {
	if s == nil {
		return nil, true
	}
	ok := true
	if !hedgeAPIs[r.API] {
		c.at(src, d, "hedge", "only routes of chat_completions, messages, responses or embeddings hedge; this one serves %s", r.API)
		ok = false
	}
	if s.Max != 1 {
		// Envoy 1.40 sends a hedge to another provider only through a
		// composite cluster per ordered pair of providers (xds/resources):
		// a second hedge would need one per triple.
		c.at(src, d, "hedge.max", "must be 1 (one hedged attempt beside the first), got %d", s.Max)
		ok = false
	}
	if r.Attempts < 2 {
		c.at(src, d, "hedge", "needs attempts of at least 2, the route has %d", r.Attempts)
		ok = false
	}
	h := &Hedge{After: s.After.D, P95: s.After.P95}
	if !h.P95 && (h.After < minHedgeAfter || h.After >= r.PerTryIdleTimeout) {
		c.at(src, d, "hedge.after", "must be p95 or a duration from %s to below per_try_idle_timeout (%s), got %s", minHedgeAfter, r.PerTryIdleTimeout, h.After)
		ok = false
	}
	return h, ok
}
