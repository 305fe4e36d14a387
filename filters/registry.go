package filters

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/store"
)

// order is the one place that fixes where each filter runs: request hooks
// ascend it, response hooks descend it. It is the plugin.cfg of the project.
var order = map[string]int{
	"admin":        50,
	"auth":         100,
	"catalog":      150,
	"usage_report": 160,
	"router":       200,
	// quota runs after router: a budget reservation prices the plan the
	// router chose.
	"quota": 300,
	// usage sits inside translate so that its Done runs after translate's,
	// which prices the answer (a stream the client cut short included).
	"usage":     350,
	"translate": 400,
}

// Order returns a filter's position; unknown names sort last.
func Order(name string) int {
	if o, ok := order[name]; ok {
		return o
	}
	return 1 << 30
}

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
	// Ledger writes usage records to the database, off the request path;
	// it outlives policy reloads. Nil in tools that only validate.
	Ledger *ledger.Writer
	// Usage queries the ledger for the usage API. Nil in tools that only
	// validate.
	Usage ledger.Ledger
	// Audit records requests and admin actions; nil discards.
	Audit *audit.Logger
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

// StickyStore remembers which model served an end user on a route.
type StickyStore interface {
	Get(route, user string) (model string, ok bool)
	Set(route, user, model string, cooldown time.Duration)
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
// from init; the name must be in the order table.
func Register(name string, f Factory) {
	if _, ok := order[name]; !ok {
		panic("filters: " + name + " is not in the order table of registry.go")
	}
	regMu.Lock()
	defer regMu.Unlock()
	factories[name] = f
}

// Registered returns the names of the registered filters, sorted by order.
func Registered() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return Order(names[i]) < Order(names[j]) })
	return names
}

// requires lists filters that must be on a route for another to work.
var requires = map[string][]string{
	"quota":        {"auth", "router"},
	"router":       {"auth"},
	"translate":    {"router"},
	"usage":        {"translate"},
	"catalog":      {"auth"},
	"usage_report": {"auth"},
}

// Build makes the chain of every route of p. Errors name the policy file
// and line of the offending filter entry.
func Build(deps Deps) (map[string]*Chain, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	chains := make(map[string]*Chain, len(deps.Policy.Routes))
	var probs []error
	for _, r := range deps.Policy.Routes {
		var fs []Filter
		listed := map[string]bool{}
		for _, ref := range r.Filters {
			listed[ref.Name] = true
		}
		for _, ref := range r.Filters {
			factory := factories[ref.Name]
			if factory == nil {
				probs = append(probs, fmt.Errorf("%s: unknown filter %q (known: %v)", ref.Where, ref.Name, namesLocked()))
				continue
			}
			for _, need := range requires[ref.Name] {
				if !listed[need] {
					probs = append(probs, fmt.Errorf("%s: filter %q needs filter %q on the same route", ref.Where, ref.Name, need))
				}
			}
			rd := deps
			rd.Route = r
			f, err := factory(ref, rd)
			if err != nil {
				probs = append(probs, fmt.Errorf("%s: %w", ref.Where, err))
				continue
			}
			fs = append(fs, f)
		}
		chains[r.Name] = NewChain(fs)
	}
	if len(probs) > 0 {
		return nil, joinErrors(probs)
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

// NoArgs refuses arguments for a filter that takes none.
func NoArgs(ref policy.FilterRef) error {
	if len(ref.Shorthand) > 0 || len(ref.Args) > 0 {
		return fmt.Errorf("filter %q takes no arguments", ref.Name)
	}
	return nil
}
