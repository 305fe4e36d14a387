package filters

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/configs/reload"
	"github.com/switchyard/switchyard/state/answercache"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/store"
)

// Order returns a filter's position in a chain: its declaration fixes it,
// for every route.
func Order(name string) int { return policy.FilterOrder(name) }

// Deps are the shared services a filter may use, set at construction.
type Deps struct {
	Policy *policy.Policy
	// Route is the route whose chain is being built (set by Build).
	Route  *policy.Route
	Logger *slog.Logger
	// Metrics is the registry filters register their collectors on,
	// through [Collectors]; nil in tools that only validate.
	Metrics prometheus.Registerer
	// Secrets resolves provider keys; nil in tools that only validate.
	Secrets SecretSource
	// Store is the state replicas share (limits, budgets, runtime keys,
	// health); nil in tools that only validate.
	Store store.Store
	// Spool keeps budget commits the store could not take during an outage
	// and writes them when it is back; it outlives policy reloads. Nil in
	// tools that only validate (commits then go to the store directly).
	Spool *store.Spooler
	// Health is the provider health monitor; it outlives policy reloads.
	Health *health.Monitor
	// Sticky remembers which model served each end user; it outlives
	// policy reloads.
	Sticky StickyStore
	// Calibration learns auto routes' complexity thresholds from their
	// traffic, shared across replicas; it outlives policy reloads. Nil:
	// the classifier's shipped calibration.
	Calibration *calibration.Calibrator
	// Priors learns the domain priors of routes with routing.learn, from
	// the verdicts on their weak answers, shared across replicas; it
	// outlives policy reloads. Nil: no route learns.
	Priors *priors.Learner
	// Ledger writes usage records to the database, off the request path;
	// it outlives policy reloads. Nil in tools that only validate.
	Ledger *ledger.Writer
	// Events publishes one usage event per ledger row (state/events), off
	// the request path; nil when usage events are off.
	Events *events.Publisher
	// Answers is the response cache's layer shared by the replicas
	// (Redis); nil without Redis, when each replica's memory is the cache.
	Answers *answercache.Shared
	// Alerts announces budget thresholds crossed (state/events); nil when
	// events are off.
	Alerts *events.Alerter
	// Usage queries the ledger for the usage API. Nil in tools that only
	// validate.
	Usage ledger.Ledger
	// Audit records requests and admin actions; nil discards.
	Audit *audit.Logger
	// Loads reports this process's policy loads: the version serving and
	// the last edit refused. Nil in tools that only validate.
	Loads *reload.Reporter
}

// Log returns the logger a filter logs through: Logger, or one that
// discards when none is set (tools that only validate).
func (d Deps) Log() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// Collectors keeps one set of a filter package's metric collectors per
// registry. Every policy reload builds the filters again on the registry of
// the first build, which refuses a second registration of the same
// metrics: the filters of every build share the collectors of the first.
// The zero value is ready for use.
type Collectors[M any] struct {
	mu    sync.Mutex
	byReg map[prometheus.Registerer]M
}

// For returns the collectors of reg. On reg's first use build makes them,
// with the list to register on reg; a nil reg (tools that only validate)
// gets collectors registered nowhere.
func (c *Collectors[M]) For(reg prometheus.Registerer, build func() (M, []prometheus.Collector)) M {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.byReg[reg]; ok {
		return m
	}
	m, cs := build()
	if reg != nil {
		reg.MustRegister(cs...)
	}
	if c.byReg == nil {
		c.byReg = map[prometheus.Registerer]M{}
	}
	c.byReg[reg] = m
	return m
}

// StickyStore remembers which model served an end user of a tenant on a
// route.
type StickyStore interface {
	Get(route, tenant, user string) (model string, ok bool)
	Set(route, tenant, user, model string, cooldown time.Duration)
}

// SecretSource resolves a secret reference to its value.
type SecretSource interface {
	Resolve(ref policy.SecretRef) (string, error)
}

// Factory builds a filter from its route arguments. Shorthand holds the
// positional arguments of "name=a,b"; Args the expanded form.
type Factory func(ref policy.FilterRef, deps Deps) (Filter, error)

var (
	regMu     sync.RWMutex
	factories = map[string]Factory{}
)

// Register makes a filter available to policies. Filter packages call it
// from init; the name must have a declaration in filters/specs.
func Register(name string, f Factory) {
	if !policy.KnownFilter(name) {
		panic("filters: " + name + " has no declaration in filters/specs")
	}
	regMu.Lock()
	defer regMu.Unlock()
	factories[name] = f
}

// Build makes the chain of every route of a policy that configs/policy
// has validated (filter names, requirements and arguments). Errors name
// the policy file and line of the offending filter entry.
func Build(deps Deps) (map[string]*Chain, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	chains := make(map[string]*Chain, len(deps.Policy.Routes))
	var probs []error
	// A cause shared by every route (a provider key unset) is reported
	// once, where it is first met.
	seen := map[string]bool{}
	report := func(where string, err error) {
		causes := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			causes = j.Unwrap()
		}
		for _, c := range causes {
			if !seen[c.Error()] {
				seen[c.Error()] = true
				probs = append(probs, fmt.Errorf("%s: %w", where, c))
			}
		}
	}
	for _, r := range deps.Policy.Routes {
		var fs []Filter
		built := true
		for _, ref := range r.Filters {
			factory := factories[ref.Name]
			if factory == nil {
				probs = append(probs, fmt.Errorf("%s: unknown filter %q (known: %v)", ref.Where, ref.Name, namesLocked()))
				built = false
				continue
			}
			rd := deps
			rd.Route = r
			f, err := factory(ref, rd)
			if err != nil {
				report(ref.Where, err)
				built = false
				continue
			}
			fs = append(fs, f)
		}
		if !built {
			// The chain lacks the filters that failed: what it would then
			// miss (a field no filter provides) is their consequence, not
			// a problem of its own.
			continue
		}
		c := NewChain(fs)
		if err := checkFlow(c.filters); err != nil {
			probs = append(probs, fmt.Errorf("route %s: %w", r.Name, err))
			continue
		}
		chains[r.Name] = c
	}
	if len(probs) > 0 {
		return nil, errors.Join(probs...)
	}
	return chains, nil
}

func namesLocked() []string {
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
