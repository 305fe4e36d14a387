package calibration

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Sketch parameters: 0.1 % relative accuracy on a score in (0, 1] puts a
// threshold within ±0.001 of the exact quantile, which matters when a
// domain's scores crowd into a narrow band; the bins span only the
// scores seen and are bounded, so a sketch stays a few kilobytes.
const (
	relativeAccuracy = 0.001
	maxBins          = 8192
	// steps is the resolution of the quantile table the request path
	// reads: a share is placed within 0.1 %.
	steps = 1000
)

// Board is where replicas share their sketches (store.SketchBoard).
type Board interface {
	PutSketch(ctx context.Context, series, replica string, data []byte, ttl time.Duration) error
	Sketches(ctx context.Context, series string) (map[string][]byte, error)
}

// Target is what a route asks of its calibration.
type Target struct {
	// Share is the share of requests meant to score at or above the
	// threshold (shown in the metrics).
	Share float64
	// HalfLife is how fast old scores fade.
	HalfLife time.Duration
	// MinSamples is the decayed count a tenant (or route) needs before
	// its own distribution is used.
	MinSamples int
	// Adjust, when set, lets ratings of weak-model answers move Share.
	Adjust *Adjust
}

// Key names a series: a route and a tenant ("" is the route as a whole).
type Key struct{ Route, Tenant string }

// Calibrator holds the score distributions of every calibrated route and
// tenant. It is safe for concurrent use and outlives policy reloads.
type Calibrator struct {
	replica string
	board   Board // nil: one node
	now     func() time.Time
	log     *slog.Logger

	mu     sync.RWMutex
	series map[Key]*series
	routes map[string]Target
	// shares are the strong shares ratings move: a route's as a whole
	// (Tenant ""), moved by verdicts the gateway trusts (its judge), and
	// each tenant's own, moved by its apps' ratings, so that no tenant's
	// feedback moves another's routing.
	shares map[Key]*adjusted

	threshold *prometheus.GaugeVec
	samples   *prometheus.GaugeVec
	share     *prometheus.GaugeVec
}

// adjusted is the strong share of a route whose target may be moved by
// feedback.
type adjusted struct {
	base  float64       // the share the policy asked for
	share atomic.Uint64 // math.Float64bits of the share in force
	// own is set on a tenant's share once its ratings, over every
	// replica, are enough to move it; until then the tenant follows the
	// route's share.
	own   atomic.Bool
	mu    sync.Mutex
	local evidence // this replica's ratings
}

// series is one route and tenant's distribution.
type series struct {
	mu        sync.Mutex
	local     *ddsketch.DDSketch // this replica's decayed scores
	decayedAt time.Time
	view      atomic.Pointer[view] // the deployment's, read on the request path
}

// view is a quantile table of a merged distribution: q[i] is the score
// below which a share i/steps of the weight lies.
type view struct {
	q     [steps + 1]float64
	count float64
}

// New returns a calibrator for this replica; board may be nil (one node),
// reg may be nil (no metrics).
func New(replica string, board Board, reg prometheus.Registerer, log *slog.Logger) *Calibrator {
	c := &Calibrator{
		replica: replica, board: board, now: time.Now, log: log,
		series: map[Key]*series{}, routes: map[string]Target{}, shares: map[Key]*adjusted{},
		threshold: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_routing_calibrated_threshold",
			Help: "Complexity score at or above which a request goes to the strong models, read from the route's and tenant's recent traffic (tenant \"\": the whole route).",
		}, []string{"route", "tenant"}),
		samples: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_routing_calibration_samples",
			Help: "Decayed count of recent complexity scores behind a route's and tenant's calibration, over every replica.",
		}, []string{"route", "tenant"}),
		share: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_routing_strong_share",
			Help: "Share of an auto route's requests meant for the stronger models, as ratings of weak-model answers have moved it within the policy's bounds: the route's as a whole (tenant \"\", moved by the judge) and each rating tenant's own.",
		}, []string{"route", "tenant"}),
	}
	if log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if reg != nil {
		reg.MustRegister(c.threshold, c.samples, c.share)
	}
	return c
}

// Track sets the target of a route (on every policy load); Untrack is
// implied for routes a new policy drops by Retain.
func (c *Calibrator) Track(route string, t Target) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.routes[route] = t
	for k, a := range c.shares {
		if k.Route != route {
			continue
		}
		if t.Adjust == nil || a.base != t.Share {
			// A new target starts from what was asked; a reload that
			// keeps it keeps what feedback learnt, within the new bounds.
			delete(c.shares, k)
			c.share.DeleteLabelValues(k.Route, k.Tenant)
			continue
		}
		cur := math.Float64frombits(a.share.Load())
		a.share.Store(math.Float64bits(min(max(cur, t.Adjust.Min), t.Adjust.Max)))
	}
	if t.Adjust != nil && c.shares[Key{route, ""}] == nil {
		c.shares[Key{route, ""}] = newAdjusted(t.Share, t.Share, c.now())
	}
}

func newAdjusted(base, share float64, now time.Time) *adjusted {
	a := &adjusted{base: base, local: evidence{decayedAt: now}}
	a.share.Store(math.Float64bits(share))
	return a
}

// Share is the strong share in force on route for tenant: the tenant's
// own once its ratings have a say, else the route's, else base (request
// path: a read lock and an atomic load, and once per tenant and replica
// the tenant's entry, so that this replica reads its ratings from the
// others).
func (c *Calibrator) Share(route, tenant string, base float64) float64 {
	c.mu.RLock()
	a, r := c.shares[Key{route, tenant}], c.shares[Key{route, ""}]
	c.mu.RUnlock()
	if r == nil {
		return base
	}
	if a == nil && tenant != "" {
		a = c.tenantShare(Key{route, tenant})
	}
	if a != nil && a.own.Load() {
		return math.Float64frombits(a.share.Load())
	}
	return math.Float64frombits(r.share.Load())
}

// Shares is what a tracked route's strong share is: the share its target
// asks for, the route's share in force (feedback may have moved it) and
// the share of each tenant whose own ratings now set it.
type Shares struct {
	Target  Target
	Route   float64
	Tenants map[string]float64
}

// Shares reports the strong shares of route, false when no auto route of
// that name is tracked. Unlike [Calibrator.Share] it changes nothing, so
// a page that shows them can read them at will.
func (c *Calibrator) Shares(route string) (Shares, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.routes[route]
	if !ok {
		return Shares{}, false
	}
	s := Shares{Target: t, Route: t.Share, Tenants: map[string]float64{}}
	for k, a := range c.shares {
		switch {
		case k.Route != route:
		case k.Tenant == "":
			s.Route = math.Float64frombits(a.share.Load())
		case a.own.Load():
			s.Tenants[k.Tenant] = math.Float64frombits(a.share.Load())
		}
	}
	return s, true
}

// Rate records the rating (0..1) of an answer a weaker model gave on an
// auto route: a tenant's (its app's rating) moves only that tenant's
// share, which starts from the route's; tenant "" (the judge's verdict)
// moves the route's. Routes whose share is not adjusted ignore it.
func (c *Calibrator) Rate(route, tenant string, score float64) {
	if !(score >= 0 && score <= 1) {
		return
	}
	k := Key{route, tenant}
	c.mu.RLock()
	a := c.shares[k]
	c.mu.RUnlock()
	if a == nil && tenant != "" {
		a = c.tenantShare(k)
	}
	if a == nil {
		return
	}
	a.mu.Lock()
	a.local.add(score)
	a.mu.Unlock()
}

// tenantShare creates a tenant's share of an adjusted route, at the
// route's share in force.
func (c *Calibrator) tenantShare(k Key) *adjusted {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.shares[k]; a != nil {
		return a
	}
	route := c.shares[Key{k.Route, ""}]
	if route == nil {
		return nil
	}
	a := newAdjusted(route.base, math.Float64frombits(route.share.Load()), c.now())
	c.shares[k] = a
	return a
}

// Retain forgets every route not in keep, with its series.
func (c *Calibrator) Retain(keep []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for r := range c.routes {
		if !slices.Contains(keep, r) {
			delete(c.routes, r)
		}
	}
	for k := range c.shares {
		if _, ok := c.routes[k.Route]; !ok {
			delete(c.shares, k)
			c.share.DeleteLabelValues(k.Route, k.Tenant)
		}
	}
	for k := range c.series {
		if _, ok := c.routes[k.Route]; !ok {
			delete(c.series, k)
			c.samples.DeleteLabelValues(k.Route, k.Tenant)
			c.threshold.DeleteLabelValues(k.Route, k.Tenant)
		}
	}
}

func newSketch() *ddsketch.DDSketch {
	m, err := mapping.NewLogarithmicMapping(relativeAccuracy)
	if err != nil {
		panic(err) // a constant accuracy: cannot happen
	}
	return ddsketch.NewDDSketch(m, store.NewCollapsingLowestDenseStore(maxBins), store.NewCollapsingLowestDenseStore(maxBins))
}

// get returns the series of k, creating it when the route is tracked.
func (c *Calibrator) get(k Key, create bool) *series {
	c.mu.RLock()
	s := c.series[k]
	_, tracked := c.routes[k.Route]
	c.mu.RUnlock()
	if s != nil || !create || !tracked {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s = c.series[k]; s == nil {
		s = &series{local: newSketch(), decayedAt: c.now()}
		c.series[k] = s
	}
	return s
}

// anonymous is the tenant of a route without auth: "" names the route
// as a whole.
const anonymous = "(none)"

// Observe records the score of a request routed on route for tenant.
func (c *Calibrator) Observe(route, tenant string, score float64) {
	if math.IsNaN(score) || score < 0 {
		return
	}
	if tenant == "" {
		tenant = anonymous
	}
	s := c.get(Key{route, tenant}, true)
	if s == nil {
		return
	}
	s.mu.Lock()
	_ = s.local.Add(score) // a non-negative finite score is always accepted
	s.mu.Unlock()
}

// Threshold is the score at or above which a request is among the
// hardest share of route's traffic for tenant: the tenant's own
// distribution, its route's, or (with neither trusted yet) 1 − share, the
// classifier's shipped calibration. From reports which one.
func (c *Calibrator) Threshold(route, tenant string, share float64, minSamples int) (t float64, from string) {
	if tenant == "" {
		tenant = anonymous
	}
	if v := c.viewOf(Key{route, tenant}); v != nil && v.count >= float64(minSamples) {
		return v.at(1 - share), "tenant"
	}
	if v := c.viewOf(Key{route, ""}); v != nil && v.count >= float64(minSamples) {
		return v.at(1 - share), "route"
	}
	return 1 - share, "prior"
}

func (c *Calibrator) viewOf(k Key) *view {
	if s := c.get(k, false); s != nil {
		return s.view.Load()
	}
	return nil
}

// at reads the table at quantile p, interpolating between steps.
func (v *view) at(p float64) float64 {
	x := min(max(p, 0), 1) * steps
	i := int(x)
	if i >= steps {
		return v.q[steps]
	}
	f := x - float64(i)
	return v.q[i] + f*(v.q[i+1]-v.q[i])
}

// Run refreshes the views every period until ctx ends.
func (c *Calibrator) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Refresh(ctx, 3*every)
		}
	}
}

// Refresh decays, publishes and merges every series, then rebuilds the
// views the request path reads. ttl bounds how long this replica's
// sketches count for the others if it stops refreshing.
func (c *Calibrator) Refresh(ctx context.Context, ttl time.Duration) {
	c.mu.RLock()
	keys := make([]Key, 0, len(c.series))
	for k := range c.series {
		keys = append(keys, k)
	}
	targets := make(map[string]Target, len(c.routes))
	for r, t := range c.routes {
		targets[r] = t
	}
	shares := make(map[Key]*adjusted, len(c.shares))
	for k, a := range c.shares {
		shares[k] = a
	}
	c.mu.RUnlock()
	slices.SortFunc(keys, func(a, b Key) int { return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.Tenant, b.Tenant)) })

	now := c.now()
	routeSum := map[string]*ddsketch.DDSketch{}
	for _, k := range keys {
		if k.Tenant == "" {
			continue // the route's view is the merge of its tenants'
		}
		s := c.get(k, false)
		if s == nil {
			continue
		}
		merged := c.refreshSeries(ctx, k, s, targets[k.Route], now, ttl)
		if routeSum[k.Route] == nil {
			routeSum[k.Route] = newSketch()
		}
		_ = routeSum[k.Route].MergeWith(merged) // same mapping: cannot fail
	}
	for route, sk := range routeSum {
		if s := c.get(Key{route, ""}, true); s != nil {
			c.publishView(Key{route, ""}, s, sk, targets[route])
		}
	}
	for route, t := range targets {
		if t.Adjust != nil {
			c.discover(ctx, route, ttl)
		}
	}
	c.mu.RLock()
	for k, a := range c.shares {
		shares[k] = a
	}
	c.mu.RUnlock()
	for k, a := range shares {
		if t := targets[k.Route]; t.Adjust != nil {
			c.adjust(ctx, k, a, t, now, ttl)
		}
	}
}

// maxTenants bounds the tenants of a route one replica learns of from the
// others.
const maxTenants = 10_000

// discover shares the tenants of route this replica holds a share of, and
// makes an entry for each one another replica holds, so that a tenant's
// ratings posted to one replica move its routing on every replica.
func (c *Calibrator) discover(ctx context.Context, route string, ttl time.Duration) {
	if c.board == nil {
		return
	}
	var mine []string
	c.mu.RLock()
	for k := range c.shares {
		if k.Route == route && k.Tenant != "" {
			mine = append(mine, k.Tenant)
		}
	}
	c.mu.RUnlock()
	slices.Sort(mine)
	name := "routing-feedback-tenants:" + route
	if err := c.board.PutSketch(ctx, name, c.replica, []byte(strings.Join(mine, "\n")), ttl); err != nil && ctx.Err() == nil {
		c.log.Warn("sharing a route's rating tenants failed", slog.String("route", route), slog.String("error", err.Error()))
	}
	others, err := c.board.Sketches(ctx, name)
	if err != nil && ctx.Err() == nil {
		c.log.Warn("reading a route's rating tenants failed", slog.String("route", route), slog.String("error", err.Error()))
	}
	n := len(mine)
	for replica, data := range others {
		if replica == c.replica || len(data) == 0 {
			continue
		}
		for _, tenant := range strings.Split(string(data), "\n") {
			if n >= maxTenants {
				return
			}
			if tenant != "" && len(tenant) <= 256 && c.tenantShare(Key{route, tenant}) != nil {
				n++
			}
		}
	}
}

// adjust decays this replica's ratings of a route (or a tenant's of it),
// shares them, and moves the strong share one step on every replica's.
func (c *Calibrator) adjust(ctx context.Context, k Key, a *adjusted, t Target, now time.Time, ttl time.Duration) {
	route := k.Route
	a.mu.Lock()
	a.local.decay(now, t.HalfLife)
	good, bad := a.local.good, a.local.bad
	a.mu.Unlock()
	if c.board != nil {
		name := "routing-feedback:" + route
		if k.Tenant != "" {
			name += "/" + k.Tenant
		}
		if err := c.board.PutSketch(ctx, name, c.replica, encodeEvidence(good, bad), ttl); err != nil && ctx.Err() == nil {
			c.log.Warn("sharing a route's feedback failed", slog.String("route", route), slog.String("error", err.Error()))
		}
		others, err := c.board.Sketches(ctx, name)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("reading routes' feedback failed", slog.String("route", route), slog.String("error", err.Error()))
		}
		for replica, data := range others {
			if replica == c.replica {
				continue
			}
			g, b, ok := decodeEvidence(data)
			if !ok {
				c.log.Warn("a replica's feedback is unreadable", slog.String("route", route), slog.String("replica", replica))
				continue
			}
			good, bad = good+g, bad+b
		}
	}
	cur := math.Float64frombits(a.share.Load())
	if k.Tenant != "" && !a.own.Load() {
		if good+bad < minRatings {
			// Too few ratings of its own: the tenant follows the route.
			c.mu.RLock()
			r := c.shares[Key{route, ""}]
			c.mu.RUnlock()
			if r != nil {
				a.share.Store(r.share.Load())
			}
			return
		}
		a.own.Store(true)
	}
	s := nextShare(cur, good, bad, *t.Adjust)
	a.share.Store(math.Float64bits(s))
	c.share.WithLabelValues(route, k.Tenant).Set(s)
}

// encodeEvidence writes a replica's decayed ratings for the board.
func encodeEvidence(good, bad float64) []byte {
	b := binary.LittleEndian.AppendUint64(nil, math.Float64bits(good))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(bad))
}

func decodeEvidence(data []byte) (good, bad float64, ok bool) {
	if len(data) != 16 {
		return 0, 0, false
	}
	good = math.Float64frombits(binary.LittleEndian.Uint64(data))
	bad = math.Float64frombits(binary.LittleEndian.Uint64(data[8:]))
	valid := func(x float64) bool { return x >= 0 && !math.IsInf(x, 0) }
	return good, bad, valid(good) && valid(bad)
}

// refreshSeries decays the local sketch, shares it, and merges the other
// replicas' into this series' view; it returns the merged sketch.
func (c *Calibrator) refreshSeries(ctx context.Context, k Key, s *series, t Target, now time.Time, ttl time.Duration) *ddsketch.DDSketch {
	s.mu.Lock()
	if dt := now.Sub(s.decayedAt); dt > 0 && t.HalfLife > 0 {
		if f := math.Exp2(-dt.Seconds() / t.HalfLife.Seconds()); f > 0 {
			_ = s.local.Reweight(f)
		}
		s.decayedAt = now
	}
	merged := s.local.Copy()
	var buf []byte
	if c.board != nil {
		s.local.Encode(&buf, true)
	}
	s.mu.Unlock()

	if c.board != nil {
		name := seriesName(k)
		if err := c.board.PutSketch(ctx, name, c.replica, buf, ttl); err != nil && ctx.Err() == nil {
			c.log.Warn("sharing a routing calibration failed", slog.String("route", k.Route), slog.String("error", err.Error()))
		}
		others, err := c.board.Sketches(ctx, name)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("reading routing calibrations failed", slog.String("route", k.Route), slog.String("error", err.Error()))
		}
		for replica, data := range others {
			if replica == c.replica {
				continue
			}
			if err := decodeInto(merged, data); err != nil {
				c.log.Warn("a replica's routing calibration is unreadable", slog.String("route", k.Route), slog.String("replica", replica), slog.String("error", err.Error()))
			}
		}
	}
	c.publishView(k, s, merged, t)
	return merged
}

// decodeInto merges an encoded sketch into dst, leaving dst untouched
// when the data is bad.
func decodeInto(dst *ddsketch.DDSketch, data []byte) error {
	other, err := ddsketch.DecodeDDSketch(data, func() store.Store { return store.NewCollapsingLowestDenseStore(maxBins) }, dst.IndexMapping)
	if err != nil {
		return err
	}
	if c := other.GetCount(); math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
		return errors.New("count out of range")
	}
	return dst.MergeWith(other)
}

func (c *Calibrator) publishView(k Key, s *series, sk *ddsketch.DDSketch, t Target) {
	v := table(sk)
	s.view.Store(v)
	c.samples.WithLabelValues(k.Route, k.Tenant).Set(v.count)
	if v.count > 0 {
		c.threshold.WithLabelValues(k.Route, k.Tenant).Set(v.at(1 - t.Share))
	}
}

// table reads a sketch's quantiles at every step in one pass over its
// bins (asking the sketch step by step would walk them a thousand times).
func table(sk *ddsketch.DDSketch) *view {
	type bin struct{ value, count float64 }
	var bins []bin
	sk.ForEach(func(value, count float64) bool {
		if count > 0 {
			bins = append(bins, bin{value, count})
		}
		return false
	})
	slices.SortFunc(bins, func(a, b bin) int { return cmp.Compare(a.value, b.value) })
	v := &view{}
	for _, b := range bins {
		v.count += b.count
	}
	if v.count == 0 {
		return v
	}
	// q[i] is the score with a share i/steps of the weight below it. A
	// bin holds the scores within ±relativeAccuracy of its value; the
	// quantile is placed inside the bin as if they were spread evenly
	// across it (scores are continuous; equal scores move together).
	cum, j := 0.0, 0
	for i := 0; i <= steps; i++ {
		rank := float64(i) / steps * v.count
		for j < len(bins)-1 && cum+bins[j].count < rank {
			cum += bins[j].count
			j++
		}
		b := bins[j]
		f := min(max((rank-cum)/b.count, 0), 1)
		v.q[i] = b.value * (1 - relativeAccuracy + 2*relativeAccuracy*f)
	}
	return v
}

// seriesName is the shared store's name of a series; tenant names hold
// no '/'.
func seriesName(k Key) string { return "routing-score:" + k.Route + "/" + k.Tenant }
