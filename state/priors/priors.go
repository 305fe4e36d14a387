package priors

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/state/store"
)

// Config is what a route asks of its learning (routing.learn).
type Config struct {
	// Curve is the classifier's quality curve (complexity.Curve's
	// Quality): the prior every domain starts from.
	Curve []float64
	// HalfLife is how fast a domain's evidence fades.
	HalfLife time.Duration
	// MaxDomains bounds the domains of one tenant on the route; past it
	// the least recently seen go.
	MaxDomains int
	// PriorWeight is how many verdicts the prior is worth.
	PriorWeight float64
	// Explore is the most the learning may add to the route's strong
	// calls, as a share of them: the strong answers the judge buys to
	// grade weak ones against.
	Explore float64
}

// Sums of a domain's evidence, in this order in the tally board; each
// is decayed with the route's half-life.
const (
	sumRequests = iota // auto-routed requests
	sumStrong          // of which routed to the strong tier
	sumVerdicts        // verdicts on weak answers
	sumLoss            // Σ (1 − verdict)
	sumExposure        // Σ exposure(score) of the graded requests
	numSums
)

// Key names a domain within a tenant: an app and the fingerprint of its
// system prompt (0: none, the app's fallback domain).
type Key struct {
	App string
	FP  uint64
}

// name is the domain's entry in the tally board: "<app>/<fp in hex>".
func (k Key) name() string { return k.App + "/" + k.Hex() }

// Hex is the fingerprint as reported and recorded: 16 hex digits.
func (k Key) Hex() string { return fmt.Sprintf("%016x", k.FP) }

// ParseKey reads a domain's app and fingerprint back.
func ParseKey(app, hex string) (Key, error) {
	fp, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || len(hex) != 16 {
		return Key{}, errors.New("a domain's fingerprint is 16 hex digits")
	}
	return Key{App: app, FP: fp}, nil
}

func parseName(name string) (Key, bool) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return Key{}, false
	}
	k, err := ParseKey(name[:i], name[i+1:])
	return k, err == nil
}

// Learner holds every learning route's domains. It is safe for
// concurrent use and outlives policy reloads.
type Learner struct {
	board store.TallyBoard
	log   *slog.Logger

	mu     sync.RWMutex
	routes map[string]*Route

	metrics *metrics
}

// New returns a learner sharing its evidence through board (a Memory
// store on one node); reg may be nil (no metrics).
func New(board store.TallyBoard, reg prometheus.Registerer, log *slog.Logger) *Learner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Learner{board: board, log: log, routes: map[string]*Route{}, metrics: newMetrics()}
	if reg != nil {
		reg.MustRegister(l.metrics.collectors()...)
	}
	return l
}

// Route is one learning route's domains.
type Route struct {
	name  string
	l     *Learner
	cfg   atomic.Pointer[routeConfig]
	epoch atomic.Uint32 // refreshes so far: a domain's last-seen mark
	// explore is the strong calls the learning may still buy, in
	// millionths of a call: each strong call routed adds Explore of one.
	explore atomic.Int64
	mu      sync.RWMutex
	tenants map[string]*tenant
}

// exploreBurst bounds the strong calls the learning may save up while
// nothing is graded: a quiet judge does not buy a burst later.
const exploreBurst = 20 * unit

const unit = 1_000_000

type routeConfig struct {
	Config
	m model
}

// Track starts (or, on a reload, reconfigures) learning on route, and
// returns it for the router. What was learnt survives a reload.
func (l *Learner) Track(route string, c Config) (*Route, error) {
	m, err := newModel(c.Curve)
	if err != nil {
		return nil, err
	}
	if c.HalfLife <= 0 || c.MaxDomains <= 0 || c.PriorWeight <= 0 || c.Explore < 0 || c.Explore >= 1 {
		return nil, fmt.Errorf("priors: route %s: half-life, domains and prior weight must be positive and explore in [0, 1)", route)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.routes[route]
	if r == nil {
		r = &Route{name: route, l: l, tenants: map[string]*tenant{}}
		l.routes[route] = r
	}
	r.cfg.Store(&routeConfig{Config: c, m: m})
	return r, nil
}

// Retain forgets every route not in keep.
func (l *Learner) Retain(keep []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name := range l.routes {
		if !contains(keep, name) {
			delete(l.routes, name)
			l.metrics.forget(name)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (l *Learner) route(name string) *Route {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.routes[name]
}

// anonymous is the tenant of a route without auth.
const anonymous = "(none)"

// tenant is one tenant's domains on a route.
type tenant struct {
	name    string
	mu      sync.RWMutex
	domains map[Key]*Domain
	// meanUnc is the mean uncertainty of the tenant's requests, for the
	// judge's weights.
	meanUnc float64
}

func (r *Route) tenant(name string, create bool) *tenant {
	if name == "" {
		name = anonymous
	}
	r.mu.RLock()
	t := r.tenants[name]
	r.mu.RUnlock()
	if t != nil || !create {
		return t
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t = r.tenants[name]; t == nil {
		t = &tenant{name: name, domains: map[Key]*Domain{}}
		r.tenants[name] = t
	}
	return t
}

// Domain is one domain's state. Its methods are the request path: atomic
// loads and adds.
type Domain struct {
	key   Key
	seen  atomic.Uint32 // the route's epoch when last routed
	shift atomic.Uint64 // math.Float64bits of the score shift
	// weight is the judge's sampling weight of the domain's answers
	// (math.Float64bits; 0 before the first refresh: the plain sample).
	weight atomic.Uint64
	// This replica's requests since the last refresh.
	requests, strong atomic.Uint64
	// known is the deployment's recent requests as of the last refresh
	// (math.Float64bits): with seen, what eviction weighs.
	known atomic.Uint64
	route *Route

	mu sync.Mutex
	// pending holds this replica's verdict sums since the last refresh.
	pending [numSums]float64
	// merged is the deployment's evidence as last read from the board.
	merged [numSums]float64
	at     time.Time // when the board last saw an add
	factor float64
}

// Key names the domain.
func (d *Domain) Key() Key { return d.key }

// Shift is what the domain adds to a request's complexity score.
func (d *Domain) Shift() float64 { return math.Float64frombits(d.shift.Load()) }

// JudgeWeight is how much more (or less) often than the route's judge
// sample an answer of this domain should be graded, so that the judge's
// verdicts go where the estimates are least sure; 0 before the domain's
// first refresh.
func (d *Domain) JudgeWeight() float64 { return math.Float64frombits(d.weight.Load()) }

// Routed counts a request of the domain and whether it went to the
// strong tier.
func (d *Domain) Routed(strong bool) {
	d.requests.Add(1)
	if strong {
		d.strong.Add(1)
		r := d.route
		if e := int64(r.cfg.Load().Explore * unit); e > 0 && r.explore.Load() < exploreBurst {
			r.explore.Add(e)
		}
	}
}

// Explore takes one strong call from the domain's route's exploration
// budget, for the judge to buy the strong answer a weak one is graded
// against; false when the budget is spent.
func (d *Domain) Explore() bool { return d.route.explore1() }

func (r *Route) explore1() bool {
	if r.explore.Add(-unit) >= 0 {
		r.l.metrics.explored.WithLabelValues(r.name).Inc()
		return true
	}
	r.explore.Add(unit)
	return false
}

// samplePeek is how many domains an eviction looks at: Go's map
// iteration starts at a random place, so the least recently seen of a
// few is an approximate LRU in constant time (Redis's own eviction).
const samplePeek = 8

// Domain is the domain of tenant, app and fingerprint, created if new;
// a tenant at its bound makes room by dropping the least recently seen
// of a sample of its domains.
func (r *Route) Domain(tenantName, app string, fp uint64) *Domain {
	t := r.tenant(tenantName, true)
	k := Key{App: app, FP: fp}
	epoch := r.epoch.Load()
	t.mu.RLock()
	d := t.domains[k]
	t.mu.RUnlock()
	if d == nil {
		d = t.add(r, k, r.cfg.Load().MaxDomains, true)
	}
	if d != nil && d.seen.Load() != epoch {
		d.seen.Store(epoch)
	}
	return d
}

// add creates the domain of k, evicting to stay within max when evict is
// set; nil when it is not and the tenant is full.
func (t *tenant) add(r *Route, k Key, max int, evict bool) *Domain {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.domains[k]; d != nil {
		return d
	}
	if len(t.domains) >= max {
		if !evict {
			return nil
		}
		for len(t.domains) >= max {
			var oldest *Domain
			n := 0
			for _, d := range t.domains {
				if oldest == nil || d.staler(oldest) {
					oldest = d
				}
				if n++; n == samplePeek {
					break
				}
			}
			delete(t.domains, oldest.key)
		}
	}
	d := &Domain{key: k, factor: 1, route: r}
	t.domains[k] = d
	return d
}

// staler reports whether d should go before e: seen in an older
// refresh, or in the same one with less traffic.
func (d *Domain) staler(e *Domain) bool {
	if ds, es := d.seen.Load(), e.seen.Load(); ds != es {
		return ds < es
	}
	return d.traffic() < e.traffic()
}

func (d *Domain) traffic() float64 {
	return math.Float64frombits(d.known.Load()) + float64(d.requests.Load())
}

// Rate records a verdict (0..1, 1: as good as the strong model's answer)
// on a weak answer of route's domain (tenant, app, fp), whose request
// scored score; source names who gave it (judge, feedback) in the
// metrics. A route that does not learn ignores it.
func (l *Learner) Rate(route, tenantName, app string, fp uint64, score, verdict float64, source string) {
	r := l.route(route)
	if r == nil || !(verdict >= 0 && verdict <= 1) || math.IsNaN(score) {
		return
	}
	d := r.Domain(tenantName, app, fp)
	e := r.cfg.Load().m.exposure(score)

	d.mu.Lock()
	d.pending[sumVerdicts]++
	d.pending[sumLoss] += 1 - verdict
	d.pending[sumExposure] += e
	d.mu.Unlock()
	l.metrics.verdicts.WithLabelValues(route, nameOr(tenantName), source).Inc()
}

func nameOr(tenant string) string {
	if tenant == "" {
		return anonymous
	}
	return tenant
}
