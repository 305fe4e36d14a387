package priors

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/switchyard/switchyard/state/store"
)

// Run refreshes every route until ctx ends.
func (l *Learner) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.Refresh(ctx)
		}
	}
}

// Refresh hands this replica's new evidence to the board, reads the
// deployment's back, and recomputes every domain's shift, exploration
// and judge weight; the request path sees them at once.
func (l *Learner) Refresh(ctx context.Context) {
	l.mu.RLock()
	routes := make([]*Route, 0, len(l.routes))
	for _, r := range l.routes {
		routes = append(routes, r)
	}
	l.mu.RUnlock()
	for _, r := range routes {
		cfg := r.cfg.Load()
		l.discover(ctx, r, cfg)
		r.mu.RLock()
		tenants := make([]*tenant, 0, len(r.tenants))
		for _, t := range r.tenants {
			tenants = append(tenants, t)
		}
		r.mu.RUnlock()
		for _, t := range tenants {
			l.refreshTenant(ctx, r, t, cfg)
		}
		r.epoch.Add(1)
	}
}

// maxTenants bounds the tenants of a route one replica learns of from
// the board.
const maxTenants = 10_000

// discover shares the tenants of r this replica knows and makes an entry
// for each one the board knows, so that a replica that never saw a
// tenant (a new one, or one restarted) routes by its priors from its
// first refresh.
func (l *Learner) discover(ctx context.Context, r *Route, cfg *routeConfig) {
	name := "routing-priors-tenants:" + r.name
	r.mu.RLock()
	adds := make([]store.Tally, 0, len(r.tenants))
	for t := range r.tenants {
		adds = append(adds, store.Tally{Name: t, Sums: []float64{1}})
	}
	r.mu.RUnlock()
	ttl := ttlHalfLives * cfg.HalfLife
	if len(adds) > 0 {
		if err := l.board.AddTallies(ctx, name, adds, cfg.HalfLife, ttl); err != nil && ctx.Err() == nil {
			l.log.Warn("sharing a route's learning tenants failed", slog.String("route", r.name), slog.String("error", err.Error()))
		}
	}
	known, err := l.board.Tallies(ctx, name, cfg.HalfLife)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("reading a route's learning tenants failed", slog.String("route", r.name), slog.String("error", err.Error()))
		}
		return
	}
	for _, tl := range known {
		r.mu.RLock()
		n := len(r.tenants)
		r.mu.RUnlock()
		if n >= maxTenants {
			return
		}
		r.tenant(tl.Name, true)
	}
}

// series is a tenant's tally series on a route; tenant names hold no '/'.
func series(route, tenant string) string { return "routing-priors:" + route + "/" + tenant }

// ttlHalfLives is how many half-lives a tenant's evidence is kept after
// its last add: by then it weighs a sixteenth.
const ttlHalfLives = 4

// faded is the evidence under which an entry is dropped from the board.
const faded = 1e-3

func (l *Learner) refreshTenant(ctx context.Context, r *Route, t *tenant, cfg *routeConfig) {
	name := series(r.name, t.name)
	t.mu.RLock()
	domains := make([]*Domain, 0, len(t.domains))
	for _, d := range t.domains {
		domains = append(domains, d)
	}
	t.mu.RUnlock()

	var adds []store.Tally
	var taken []*Domain
	for _, d := range domains {
		var s [numSums]float64
		s[sumRequests] = float64(d.requests.Swap(0))
		s[sumStrong] = float64(d.strong.Swap(0))
		d.mu.Lock()
		s[sumVerdicts], s[sumLoss], s[sumExposure] = d.pending[sumVerdicts], d.pending[sumLoss], d.pending[sumExposure]
		d.pending = [numSums]float64{}
		d.mu.Unlock()
		if s != ([numSums]float64{}) {
			adds = append(adds, store.Tally{Name: d.key.name(), Sums: s[:]})
			taken = append(taken, d)
		}
	}
	if len(adds) > 0 {
		if err := l.board.AddTallies(ctx, name, adds, cfg.HalfLife, ttlHalfLives*cfg.HalfLife); err != nil {
			// Kept for the next refresh: nothing learnt is lost to an outage.
			for i, d := range taken {
				d.requests.Add(uint64(adds[i].Sums[sumRequests]))
				d.strong.Add(uint64(adds[i].Sums[sumStrong]))
				d.mu.Lock()
				for _, j := range []int{sumVerdicts, sumLoss, sumExposure} {
					d.pending[j] += adds[i].Sums[j]
				}
				d.mu.Unlock()
			}
			if ctx.Err() == nil {
				l.log.Warn("sharing routing priors failed", slog.String("route", r.name), slog.String("tenant", t.name), slog.String("error", err.Error()))
			}
			return
		}
	}
	tallies, err := l.board.Tallies(ctx, name, cfg.HalfLife)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("reading routing priors failed", slog.String("route", r.name), slog.String("tenant", t.name), slog.String("error", err.Error()))
		}
		return
	}
	tallies = l.trim(ctx, name, tallies, cfg.MaxDomains)

	// The board is the truth: a domain it no longer holds (reset, or
	// trimmed) starts again from the prior.
	seen := make(map[*Domain]bool, len(tallies))
	for _, tl := range tallies {
		k, ok := parseName(tl.Name)
		if !ok {
			continue
		}
		t.mu.RLock()
		d := t.domains[k]
		t.mu.RUnlock()
		if d == nil {
			// Learnt on another replica (or before a restart): routed
			// here too, while the tenant has room.
			if d = t.add(r, k, cfg.MaxDomains, false); d == nil {
				continue
			}
		}
		d.mu.Lock()
		d.merged = [numSums]float64{}
		copy(d.merged[:], tl.Sums)
		d.at = tl.At
		d.mu.Unlock()
		seen[d] = true
	}
	t.mu.RLock()
	domains = domains[:0]
	for _, d := range t.domains {
		domains = append(domains, d)
	}
	t.mu.RUnlock()
	for _, d := range domains {
		if !seen[d] {
			d.mu.Lock()
			d.merged = [numSums]float64{}
			d.mu.Unlock()
		}
	}
	l.estimate(r, t, cfg, domains)
}

// trim drops from the board the entries that faded and, past max, the
// least recently added to; it returns the rest.
func (l *Learner) trim(ctx context.Context, name string, tallies []store.Tally, max int) []store.Tally {
	var drop []string
	keep := tallies[:0]
	for _, tl := range tallies {
		total := 0.0
		for _, s := range tl.Sums {
			total += math.Abs(s)
		}
		if total < faded {
			drop = append(drop, tl.Name)
			continue
		}
		keep = append(keep, tl)
	}
	if len(keep) > max {
		slices.SortFunc(keep, func(a, b store.Tally) int { return b.At.Compare(a.At) })
		for _, tl := range keep[max:] {
			drop = append(drop, tl.Name)
		}
		keep = keep[:max]
	}
	if len(drop) > 0 {
		if err := l.board.DropTallies(ctx, name, drop); err != nil && ctx.Err() == nil {
			l.log.Warn("trimming routing priors failed", slog.String("series", name), slog.String("error", err.Error()))
		}
	}
	return keep
}

// estimate recomputes a tenant's domains from their merged evidence.
func (l *Learner) estimate(r *Route, t *tenant, cfg *routeConfig, domains []*Domain) {
	m, w := cfg.m, cfg.PriorWeight
	var loss, exposure, requests float64
	for _, d := range domains {
		d.mu.Lock()
		loss += d.merged[sumLoss]
		exposure += d.merged[sumExposure]
		requests += d.merged[sumRequests]
		d.mu.Unlock()
	}
	// A domain without verdicts of its own is taken to be like the
	// tenant's average learnt domain, over its traffic; that average is
	// also each learnt domain's prior (model.center). A tenant without
	// verdicts has the shipped calibration.
	pooled := m.factor(1, w, loss, exposure)
	ev := make([][numSums]float64, len(domains))
	for i, d := range domains {
		d.mu.Lock()
		ev[i] = d.merged
		d.mu.Unlock()
	}
	pooled = m.center(w, ev, pooled)
	f, shifts := make([]float64, len(domains)), make([]float64, len(domains))
	var learnt, sum, weight float64
	for i, d := range domains {
		f[i] = m.factor(pooled, w, ev[i][sumLoss], ev[i][sumExposure])
		d.mu.Lock()
		d.factor = f[i]
		d.mu.Unlock()
		if ev[i][sumVerdicts] > 0 {
			learnt += ev[i][sumRequests]
			shifts[i] = m.shift(f[i], pooled)
			sum += (ev[i][sumRequests] + ev[i][sumVerdicts]) * shifts[i]
			weight += ev[i][sumRequests] + ev[i][sumVerdicts]
		}
	}
	// The learnt domains' shifts average 0 by construction of the
	// center; where it has no interior solution (no domain's weak
	// answer ever fell short) the mean is taken out here.
	if weight > 0 {
		for i := range shifts {
			if ev[i][sumVerdicts] > 0 {
				shifts[i] -= sum / weight
			}
		}
	}
	modes := map[string]float64{}
	var unc float64
	for i, d := range domains {
		s := shifts[i]
		d.shift.Store(math.Float64bits(s))
		d.known.Store(math.Float64bits(ev[i][sumRequests]))
		unc += ev[i][sumRequests] * uncertainty(w, ev[i][sumExposure])
		modes[modeOf(ev[i][sumVerdicts], s)]++
	}
	// The judge's weight of a domain: its uncertainty against the
	// tenant's average request's, so that drawing `sample` of the
	// requests so weighted grades as many as drawing evenly would, and
	// spends them where the estimates are least sure.
	if requests > 0 {
		t.meanUnc = unc / requests
	}
	for _, d := range domains {
		if t.meanUnc > 0 {
			d.mu.Lock()
			u := uncertainty(w, d.merged[sumExposure])
			d.mu.Unlock()
			d.weight.Store(math.Float64bits(u / t.meanUnc))
		}
	}
	l.metrics.publish(r.name, t.name, modes, learnt, requests)
}

// uncertainty is a domain factor's relative standard deviation: the
// Gamma posterior's 1/√(shape).
func uncertainty(priorWeight, exposure float64) float64 {
	return 1 / math.Sqrt(priorWeight+exposure)
}

// Modes of a domain, as reported: routed as the tenant's average (no
// verdicts yet), always to the strong or the weak tier, or by its
// shifted score.
const (
	ModePrior   = "prior"
	ModeStrong  = "strong"
	ModeWeak    = "weak"
	ModeShifted = "shifted"
)

func modeOf(verdicts, shift float64) string {
	switch {
	case verdicts <= 0:
		return ModePrior
	case shift >= 1:
		return ModeStrong
	case shift <= -1:
		return ModeWeak
	}
	return ModeShifted
}
