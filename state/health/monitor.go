package health

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

// AllProviders names every provider in [Monitor.SetDrill], including those
// the monitor has not seen yet.
const AllProviders = policy.AllProviders

// Monitor keeps the health of every provider and model it is told about.
// Provider and model names must come from the policy, never from a client:
// the monitor keeps an entry, and metrics a series, for each. A Monitor is
// safe for concurrent use.
type Monitor struct {
	now    func() time.Time
	origin time.Time // windows count their buckets from here, on the monotonic clock
	log    *slog.Logger

	mu        sync.Mutex
	cfg       Config
	gen       uint64 // bumps on each Reconfigure, to drop cached judgements
	providers map[string]*provider
	drills    drills
	pending   []event // log records made under mu, written after it is released

	outageHook func(Outage)
	outages    []Outage // breakers opened under mu, told to outageHook after it is released

	degradedHook func(provider, model string)
	degraded     [][2]string // models turned degraded under mu, told to degradedHook after it is released

	inflight inflight
}

type provider struct {
	name    string
	breaker *breaker
	logged  BreakerState // breaker state last logged
	status  status
	window  *window // every model's attempts, for the snapshot
	models  map[string]*model

	lastTraffic time.Time   // the last attempt observed
	lastSuccess time.Time   // the last attempt or check that succeeded
	lastCheck   CheckStatus // the last active check
	// unreachable is set while the provider's last attempt or check could
	// not reach it at all (its name, its port, its TLS), until one does.
	unreachable *Unreachable
}

type model struct {
	name      string
	window    *window
	status    status
	heldUntil time.Time // a failed canary keeps the model unavailable until then
	judged    judgement
	// overSince is when the error rate went past its unavailable bound,
	// zero while it is not: the model is removed once that has held
	// Config.UnavailableFor.
	overSince time.Time
	// shared are the model's attempts in other replicas' windows
	// (SetShared), counted with its own.
	shared        Counts
	sharedVersion uint64
}

// judgement caches what a window said, keyed by the window's version and
// the config generation.
type judgement struct {
	version, gen, shared uint64
	valid                bool
	stats                Stats
	state                State
	reason               string
	// errorOnly: the error rate alone is past its unavailable bound.
	errorOnly bool
}

// New returns a monitor with thresholds cfg, reading time from now (the
// system clock when nil) and writing state changes to log (nowhere when
// nil). It refuses a cfg that fails [Config.Validate].
func New(cfg Config, now func() time.Time, log *slog.Logger) (*Monitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.Recovery.Steps = slices.Clone(cfg.Recovery.Steps)
	return &Monitor{now: now, origin: now(), log: log, cfg: cfg, providers: map[string]*provider{}}, nil
}

// Reconfigure applies new thresholds, keeping everything observed: window
// contents (re-sliced when the window's length or buckets change), breaker
// states and canaries (a canary past the new last step ends). States are
// judged again at once under the new thresholds. A cfg that fails
// [Config.Validate] is refused and the old one stays.
func (m *Monitor) Reconfigure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Recovery.Steps = slices.Clone(cfg.Recovery.Steps)
	m.mu.Lock()
	now := m.now()
	resliced := cfg.Window != m.cfg.Window || cfg.Buckets != m.cfg.Buckets
	m.cfg = cfg // breakers point at m.cfg.Breaker, so they see the new settings
	m.gen++
	for _, p := range m.providers {
		if resliced {
			p.window = p.window.rebucket(&m.cfg, m.age(now))
		}
		clampCanary(&p.status.canary, &m.cfg.Recovery)
		for _, md := range p.models {
			if resliced {
				md.window = md.window.rebucket(&m.cfg, m.age(now))
			}
			clampCanary(&md.status.canary, &m.cfg.Recovery)
		}
	}
	m.evalAll(now)
	m.unlock()
	return nil
}

// clampCanary ends a canary whose step the new steps no longer have, or
// whose step now gives full traffic.
func clampCanary(c *canary, r *RecoveryConfig) {
	if c.active && (c.step >= len(r.Steps) || r.Steps[c.step] >= 1) {
		*c = canary{}
	}
}

// Track makes the monitor know exactly these providers and their models
// (provider name → model names), so that snapshots and metrics list them
// before any traffic. Entries not listed are forgotten; drills are kept,
// since they name providers, not entries.
func (m *Monitor) Track(models map[string][]string) {
	m.mu.Lock()
	now := m.now()
	for name, p := range m.providers {
		names, ok := models[name]
		if !ok {
			delete(m.providers, name)
			continue
		}
		for mn := range p.models {
			if !slices.Contains(names, mn) {
				delete(p.models, mn)
			}
		}
	}
	for pn, names := range models {
		p := m.provider(pn, now)
		for _, mn := range names {
			p.model(mn, &m.cfg, now)
		}
	}
	m.evalAll(now)
	m.unlock()
}

// Observe records the outcome of one attempt. A failed attempt (see
// [Observation.Failed]) counts against the model's window and the
// provider's breaker, and ends the canary of the provider or model it
// hits: a provider's breaker opens again, a model is held unavailable for
// Breaker.OpenTimeout. A canceled attempt is ignored.
func (m *Monitor) Observe(o Observation) {
	if o.Failure == Canceled {
		return
	}
	failed := o.Failed()
	m.mu.Lock()
	now := m.now()
	p := m.provider(o.Provider, now)
	md := p.model(o.Model, &m.cfg, now)
	// Judge first, so that a canary which ended by time before this
	// observation does not count it as a failure.
	m.evalProvider(p, now)
	m.evalModel(p, md, now)
	providerCanary, modelCanary := p.status.canary.active, md.status.canary.active
	was := mark(p.breaker)
	p.lastTraffic = now
	if !failed {
		p.lastSuccess = now
	}
	p.reached(failed, o.Status, o.Failure, o.Detail, now)

	age := m.age(now)
	p.window.add(age, failed, o.Latency, o.TTFT, -1) // quotas are per model
	md.window.add(age, failed, o.Latency, o.TTFT, o.Quota)
	p.breaker.observe(o.Key, failed, now)
	if failed && providerCanary {
		p.breaker.trip(now, "failure during canary")
	}
	if failed && modelCanary {
		md.heldUntil = now.Add(m.cfg.Breaker.OpenTimeout)
	}
	m.noteOpened(p, was, now)
	m.evalProvider(p, now)
	m.evalModel(p, md, now)
	m.unlock()
}

// Admission is the monitor's answer for one request and one model.
type Admission struct {
	// Allowed is false when the model must be skipped: its provider is in a
	// drill, its breaker is open or half-open with every probe slot taken,
	// the model is unavailable, or a canary leaves this request out.
	Allowed bool
	// Weight multiplies the model's routing weight: 1 when healthy,
	// Config.DegradedWeight when degraded, 0 when not allowed. A canary
	// acts through Allowed, not through Weight, so the requests it admits
	// are routed as they would be without it and the model gets the step's
	// share of the traffic it would get.
	Weight float64
	// State is the worse of the provider's and the model's states.
	State State
	// Reason is short human text: "healthy", "fault drill", "breaker open:
	// 5 consecutive failures", "canary 10%", "degraded: p99 3.4s ≥ 3s".
	Reason string
	// Probe is true when the request holds one of the half-open breaker's
	// probe slots: the result of its attempt, given to Observe, decides
	// whether the breaker closes. Try a probe target first; a slot whose
	// request goes elsewhere comes back after Breaker.ProbeTimeout.
	Probe bool
	// NoAddress is, for an allowed target, why its provider's name
	// resolved to no address at its last attempt or check; "" when it did
	// resolve. Envoy tries no other provider after an attempt without an
	// address, so the router tries such a target after the others.
	NoAddress string
}

// Admit says whether the model may serve the request with key, a
// per-request value (such as a hash of the request ID): a canary at share
// s admits the request iff key%1000 < s·1000, so the same request gets the
// same answer every time and a share can be measured over keys. Admit
// changes nothing, except that a half-open breaker reserves a probe slot
// for key; asking again with the same key reuses it.
func (m *Monitor) Admit(provider, model string, key uint64) Admission {
	m.mu.Lock()
	now := m.now()
	p := m.provider(provider, now)
	md := p.model(model, &m.cfg, now)
	m.evalProvider(p, now)
	m.evalModel(p, md, now)
	a := m.admit(p, md, key, now)
	if u := p.unreachable; u != nil && u.NoAddress && a.Allowed {
		a.NoAddress = u.Reason
	}
	m.unlock()
	return a
}

func (m *Monitor) admit(p *provider, md *model, key uint64, now time.Time) Admission {
	if m.drills.on(p.name) || (p.status.state == Unavailable && p.breaker.state != BreakerHalfOpen) {
		return Admission{State: Unavailable, Reason: p.status.reason}
	}
	if md.status.state == Unavailable {
		return Admission{State: Unavailable, Reason: "unavailable: " + md.status.reason}
	}
	a := Admission{Allowed: true, Weight: 1, State: md.status.state, Reason: "healthy"}
	if a.State == Degraded {
		a.Weight, a.Reason = m.cfg.DegradedWeight, "degraded: "+md.status.reason
	}
	if p.breaker.state == BreakerHalfOpen {
		if !p.breaker.probe(key, now) {
			return Admission{State: Unavailable, Reason: "breaker half-open: every probe slot taken"}
		}
		a.State, a.Reason, a.Probe = Unavailable, "breaker half-open: probe", true
		return a
	}
	share := min(p.status.canary.share(&m.cfg.Recovery), md.status.canary.share(&m.cfg.Recovery))
	if share < 1 {
		c := "canary " + percent(share)
		if key%1000 >= uint64(math.Round(share*1000)) {
			return Admission{State: a.State, Reason: c + ": not this request"}
		}
		if a.State == Healthy {
			a.Reason = c
		} else {
			a.Reason = c + ", " + a.Reason
		}
	}
	return a
}

// SetDrill starts (down) or ends a fault drill for provider, or for every
// provider with [AllProviders]. A drilled provider is unavailable without
// its breaker or windows changing, and comes back through a canary like
// any other recovery. Ending the drill of all providers ends every drill;
// ending one provider's drill during an all-provider drill exempts it.
func (m *Monitor) SetDrill(provider string, down bool) {
	m.mu.Lock()
	now := m.now()
	m.drills.set(provider, down)
	if provider == AllProviders {
		m.evalAll(now)
	} else {
		m.evalProvider(m.provider(provider, now), now)
	}
	m.unlock()
}

// LatencyP95 returns the model's observed p95: of the time to first token
// for a stream when enough streamed attempts carried one, else of the time
// to response headers. It reports false while the window holds fewer than
// MinSamples timed attempts, or for a model never seen.
func (m *Monitor) LatencyP95(provider, model string, stream bool) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.providers[provider]
	if p == nil || p.models[model] == nil {
		return 0, false
	}
	s := m.judge(p.models[model], m.now()).stats
	switch {
	case stream && s.TTFTSamples >= m.cfg.MinSamples:
		return time.Duration(s.TTFTP95), true
	case s.LatencySamples >= m.cfg.MinSamples:
		return time.Duration(s.P95), true
	}
	return 0, false
}

func (m *Monitor) age(now time.Time) time.Duration { return now.Sub(m.origin) }

// provider returns the entry for name, creating it.
func (m *Monitor) provider(name string, now time.Time) *provider {
	p := m.providers[name]
	if p == nil {
		p = &provider{
			name:    name,
			breaker: newBreaker(&m.cfg.Breaker, now),
			status:  status{since: now},
			window:  newWindow(&m.cfg),
			models:  map[string]*model{},
		}
		m.providers[name] = p
	}
	return p
}

// model returns the provider's entry for name, creating it.
func (p *provider) model(name string, cfg *Config, now time.Time) *model {
	md := p.models[name]
	if md == nil {
		md = &model{name: name, window: newWindow(cfg), status: status{since: now}}
		p.models[name] = md
	}
	return md
}

func (m *Monitor) evalAll(now time.Time) {
	for _, p := range m.providers {
		m.evalProvider(p, now)
		for _, md := range p.models {
			m.evalModel(p, md, now)
		}
	}
}

// evalProvider judges a provider at now: unavailable while drilled or
// while its breaker is not closed. A provider is never degraded: latency
// and quota belong to a model, and a provider's errors are the breaker's
// business.
func (m *Monitor) evalProvider(p *provider, now time.Time) {
	p.breaker.advance(now)
	if p.breaker.state != p.logged {
		m.note(slog.LevelInfo, "circuit breaker "+p.breaker.state.String(), slog.String("provider", p.name),
			slog.String("from", p.logged.String()), slog.String("reason", p.breaker.reason))
		p.logged = p.breaker.state
	}
	st, why := Healthy, ""
	switch {
	case m.drills.on(p.name):
		st, why = Unavailable, "fault drill"
	case p.breaker.state == BreakerOpen:
		st, why = Unavailable, "breaker open: "+p.breaker.reason
	case p.breaker.state == BreakerHalfOpen:
		st, why = Unavailable, "breaker half-open"
	}
	m.noteChange(p.status.update(st, why, now, &m.cfg.Recovery), &p.status, p.name, "")
}

// evalModel judges a model at now from its window, or as unavailable while
// a failed canary holds it.
func (m *Monitor) evalModel(p *provider, md *model, now time.Time) {
	j := m.judge(md, now)
	st, why := j.state, j.reason
	switch {
	case !j.errorOnly:
		md.overSince = time.Time{}
	case m.cfg.UnavailableFor > 0:
		if md.overSince.IsZero() {
			md.overSince = now
		}
		if held := now.Sub(md.overSince); held < m.cfg.UnavailableFor {
			// The seed's level 2: removed only once it has held.
			st, why = Degraded, why+" for "+Duration(held.Truncate(time.Second)).String()+" of "+Duration(m.cfg.UnavailableFor).String()
		}
	}
	if now.Before(md.heldUntil) {
		st, why = Unavailable, "failure during canary"
	}
	m.noteChange(md.status.update(st, why, now, &m.cfg.Recovery), &md.status, p.name, md.name)
}

// judge returns what the model's window says at now, cached until the
// window or the config changes.
func (m *Monitor) judge(md *model, now time.Time) judgement {
	w := md.window
	w.advance(w.epochOf(m.age(now)))
	if j := md.judged; j.valid && j.version == w.version && j.gen == m.gen && j.shared == md.sharedVersion {
		return j
	}
	s := w.stats()
	s.addShared(md.shared)
	st, why, errorOnly := judgeErrors(s, &m.cfg)
	md.judged = judgement{version: w.version, gen: m.gen, shared: md.sharedVersion, valid: true, stats: s, state: st, reason: why, errorOnly: errorOnly}
	return md.judged
}

// event is a log record made under the lock.
type event struct {
	level slog.Level
	msg   string
	attrs []slog.Attr
}

func (m *Monitor) note(level slog.Level, msg string, attrs ...slog.Attr) {
	m.pending = append(m.pending, event{level, msg, attrs})
}

// noteChange logs a state change of a provider (model "") or a model: an
// error (the alert) on entering unavailable, a warning on entering
// degraded, information otherwise.
func (m *Monitor) noteChange(ch change, s *status, provider, model string) {
	if !ch.moved && !ch.stepped && ch.ended == "" {
		return
	}
	subject, who := "provider", []slog.Attr{slog.String("provider", provider)}
	if model != "" {
		subject, who = "model", append(who, slog.String("model", model))
	}
	with := func(attrs ...slog.Attr) []slog.Attr { return append(slices.Clip(who), attrs...) }
	if ch.moved {
		level := slog.LevelInfo
		switch ch.to {
		case Unavailable:
			level = slog.LevelError
		case Degraded:
			level = slog.LevelWarn
			if model != "" && ch.from == Healthy && m.degradedHook != nil {
				m.degraded = append(m.degraded, [2]string{provider, model})
			}
		}
		m.note(level, subject+" "+ch.to.String(), with(slog.String("from", ch.from.String()), slog.String("reason", s.reason))...)
	}
	if ch.canaryStarted || (ch.stepped && s.canary.active) {
		m.note(slog.LevelInfo, subject+" canary", with(slog.Int("step", s.canary.step), slog.Float64("share", s.canary.share(&m.cfg.Recovery)))...)
	}
	if ch.ended != "" {
		m.note(slog.LevelInfo, subject+" recovered", with(slog.String("reason", ch.ended))...)
	}
}

// unlock releases the lock and then writes the log records made under it,
// so that a slow log handler never holds up routing.
func (m *Monitor) unlock() {
	pending, outages, hook := m.pending, m.outages, m.outageHook
	degraded, onDegraded := m.degraded, m.degradedHook
	m.pending, m.outages, m.degraded = nil, nil, nil
	m.mu.Unlock()
	for _, e := range pending {
		m.log.LogAttrs(context.Background(), e.level, e.msg, e.attrs...)
	}
	for _, o := range outages {
		hook(o)
	}
	for _, d := range degraded {
		onDegraded(d[0], d[1])
	}
}

// drills are the providers under a fault drill.
type drills struct {
	all    bool            // AllProviders is down
	down   map[string]bool // drilled one by one
	exempt map[string]bool // brought back up during an all-provider drill
}

func (d *drills) on(provider string) bool {
	return d.down[provider] || d.all && !d.exempt[provider]
}

func (d *drills) set(provider string, down bool) {
	switch {
	case provider == AllProviders && down:
		d.all, d.exempt = true, nil
	case provider == AllProviders:
		*d = drills{}
	case down:
		if d.down == nil {
			d.down = map[string]bool{}
		}
		d.down[provider] = true
		delete(d.exempt, provider)
	default:
		delete(d.down, provider)
		if d.all {
			if d.exempt == nil {
				d.exempt = map[string]bool{}
			}
			d.exempt[provider] = true
		}
	}
}
