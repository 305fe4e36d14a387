package probe

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/configs/policy"
)

// Verdict is what the probes of a capability say of it.
type Verdict string

// The verdicts.
const (
	// Passing: the last probe that passed or failed passed.
	Passing Verdict = "passing"
	// Failing: the last probe that passed or failed failed; requests
	// that need the capability skip the model.
	Failing Verdict = "failing"
	// Unknown: no probe of it has passed or failed yet.
	Unknown Verdict = "unknown"
)

// Record is one provider's probe results, as the replica that probed it
// last wrote them to the shared board. It is also what GET
// /admin/providers shows under "probes".
type Record struct {
	Provider string `json:"provider"`
	// Ran is when the provider's probes last ran.
	Ran time.Time `json:"ran"`
	// SpentMicros is what the provider's probes had cost on Day (UTC,
	// YYYY-MM-DD) when they ran, of CapMicros, in micro-USD.
	Day         string         `json:"day,omitempty"`
	SpentMicros int64          `json:"spent_micros"`
	CapMicros   int64          `json:"cap_micros"`
	Models      []ModelResults `json:"models"`
}

// ModelResults are one model's results on the provider.
type ModelResults struct {
	Model        string   `json:"model"`
	Capabilities []Result `json:"capabilities"`
}

// Result is the state of one capability of one model.
type Result struct {
	Capability string  `json:"capability"`
	Verdict    Verdict `json:"verdict"`
	// Since is when the probes first found the verdict; zero while it is
	// unknown.
	Since time.Time `json:"since,omitzero"`
	// Last is what the last probe found (an [Outcome]), Detail why, and
	// At when.
	Last   string    `json:"last"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

// after is the result once a probe found o: a pass or a failure sets the
// verdict, anything else leaves it as it was.
func (r Result) after(o Outcome, detail string, at time.Time) Result {
	n := Result{Capability: r.Capability, Verdict: r.Verdict, Since: r.Since, Last: o.String(), Detail: detail, At: at}
	v := map[Outcome]Verdict{Passed: Passing, Failed: Failing}[o]
	switch {
	case v != "" && v != r.Verdict:
		n.Verdict, n.Since = v, at
	case n.Verdict == "":
		n.Verdict = Unknown
	}
	return n
}

// result is the result of capability name of model, or a blank one.
func (r Record) result(model, name string) Result {
	for _, m := range r.Models {
		if m.Model != model {
			continue
		}
		for _, c := range m.Capabilities {
			if c.Capability == name {
				return c
			}
		}
	}
	return Result{Capability: name}
}

// deployment names a model on a provider.
type deployment struct{ provider, model string }

// Board holds the verdicts of every probed provider, as this replica
// last read them from the shared board (or wrote them). It is safe for
// concurrent use; the router reads it on every request without a lock.
type Board struct {
	mu      sync.Mutex
	records map[string]Record
	failing atomic.Pointer[map[deployment]policy.Capability]
}

// NewBoard returns an empty board: every claim stands until a probe
// fails it.
func NewBoard() *Board {
	b := &Board{records: map[string]Record{}}
	b.failing.Store(&map[deployment]policy.Capability{})
	return b
}

// Failing returns the capabilities model on provider claims but failed
// its probes of, 0 for none.
func (b *Board) Failing(provider, model string) policy.Capability {
	return (*b.failing.Load())[deployment{provider, model}]
}

// Snapshot returns every provider's record, sorted by provider.
func (b *Board) Snapshot() []Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Record, 0, len(b.records))
	for _, r := range b.records {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.Provider, b.Provider) })
	return out
}

// record returns provider's record.
func (b *Board) record(provider string) Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records[provider]
}

// set replaces every record with recs, as read from the shared board.
func (b *Board) set(p *policy.Policy, recs []Record) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.records = make(map[string]Record, len(recs))
	for _, r := range recs {
		if r, ok := current(p, r); ok {
			b.records[r.Provider] = r
		}
	}
	b.index()
}

// put replaces one provider's record, one this replica just wrote.
func (b *Board) put(p *policy.Policy, r Record) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := current(p, r); ok {
		b.records[r.Provider] = r
	} else {
		delete(b.records, r.Provider)
	}
	b.index()
}

// index rebuilds the failing capabilities the router reads. b.mu is held.
func (b *Board) index() {
	failing := map[deployment]policy.Capability{}
	for _, r := range b.records {
		for _, m := range r.Models {
			for _, c := range m.Capabilities {
				if c.Verdict == Failing {
					failing[deployment{r.Provider, m.Model}] |= capOf(c.Capability)
				}
			}
		}
	}
	b.failing.Store(&failing)
}

// current keeps of r what the policy still probes: a provider that
// probes, its probed models, the capabilities they claim. A verdict on a
// capability the operator stopped claiming, or a model no longer probed,
// routes nothing.
func current(p *policy.Policy, r Record) (Record, bool) {
	prov := p.Provider(r.Provider)
	if prov == nil || prov.Probes == nil {
		return Record{}, false
	}
	out := r
	out.Models = nil
	for _, m := range r.Models {
		i := slices.IndexFunc(prov.Probes.Models, func(d *policy.Model) bool { return d.Name == m.Model })
		if i < 0 {
			continue
		}
		caps := prov.Probes.Models[i].Caps
		kept := ModelResults{Model: m.Model}
		for _, c := range m.Capabilities {
			if cp := capOf(c.Capability); cp != 0 && caps.Has(cp) {
				kept.Capabilities = append(kept.Capabilities, c)
			}
		}
		if len(kept.Capabilities) > 0 {
			out.Models = append(out.Models, kept)
		}
	}
	return out, true
}

// capOf is the capability a check is named by, 0 for none.
func capOf(name string) policy.Capability {
	for _, c := range checks {
		if c.name == name {
			return c.cap
		}
	}
	return 0
}

var failingDesc = prometheus.NewDesc("switchyard_probe_failing",
	"1 while the model's probes of a capability it claims fail (requests that need it skip the model), 0 while they pass; absent before a verdict.",
	[]string{"provider", "model", "capability"}, nil)

// Collector reports, at each scrape, every verdict of the board: the
// same on every replica, read from the shared board. Labels are names
// from the policy, so their number is bounded.
func (b *Board) Collector() prometheus.Collector { return boardCollector{b} }

type boardCollector struct{ b *Board }

// Describe implements [prometheus.Collector].
func (boardCollector) Describe(ch chan<- *prometheus.Desc) { ch <- failingDesc }

// Collect implements [prometheus.Collector].
func (c boardCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.b.Snapshot() {
		for _, m := range r.Models {
			for _, res := range m.Capabilities {
				if res.Verdict == Unknown {
					continue
				}
				v := 0.0
				if res.Verdict == Failing {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(failingDesc, prometheus.GaugeValue, v, r.Provider, m.Model, res.Capability)
			}
		}
	}
}

var _ prometheus.Collector = boardCollector{}
