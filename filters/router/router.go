package router

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/router/complexity"
	"github.com/switchyard/switchyard/redact"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/priors"
)

// Health is what the router asks of the health monitor
// (*health.Monitor); an interface so tests can script it.
type Health interface {
	Admit(provider, model string, key uint64) health.Admission
	Observe(o health.Observation)
	LatencyP95(provider, model string, stream bool) (time.Duration, bool)
	// Begin and InFlight count the attempts under way on each
	// deployment, for the least_in_flight balance.
	Begin(provider, model string) (end func())
	InFlight(provider, model string) int64
}

// Pressure is how close a tenant is to its budget (the cost governor).
type Pressure int

// Budget pressure levels.
const (
	PressureNone      Pressure = iota
	PressureHigh               // the hour's slot is 80% spent: expensive models lose weight
	PressureCheapOnly          // 95% spent or under the daily floor: only cheap models
)

// Query is one routing question.
type Query struct {
	// Ctx ends when the request is given up, which stops the scan for
	// sensitive data; nil means never.
	Ctx      context.Context
	Chat     *openaiapi.ChatRequest
	Header   func(string) string
	Tenant   *policy.Tenant
	Key      *policy.Key
	User     string
	Pressure Pressure
	// Hash is a per-request value: it drives canary shares.
	Hash uint64
	// App is the caller's app: with the tenant and the system prompt it
	// names the request's domain on a learning route.
	App string
}

// Decision is the router's answer.
type Decision struct {
	// Plan lists the models to try, in order.
	Plan []*policy.Model
	// Reason says in a few words why (rule or strategy, skipped providers).
	Reason string
	// Level and Score are the complexity of the request, when computed.
	Level complexity.Level
	Score float64
	// Ranked is every candidate with its score, for the decision log.
	Ranked []Scored
	// Split names the A/B arm when a traffic split applied.
	Split string
	// Substituted is "retired -> successor" when the model the client
	// named was retired by its vendor and its successor serves instead.
	Substituted string
	// Domain is the request's domain on a learning route (nil
	// elsewhere).
	Domain *priors.Domain
}

// Scored is a candidate model with its strategy score.
type Scored struct {
	Model  *policy.Model
	Score  float64
	Reason string // why it was skipped, if it was
}

// Router decides plans for one route. It is safe for concurrent use.
type Router struct {
	route      *policy.Route
	pol        *policy.Policy
	classifier *complexity.Classifier
	health     Health
	sticky     filters.StickyStore
	// auto is set on a route that asks for a strong share or a quality
	// target instead of thresholds.
	auto *autoTarget
	// learn is set on a route that learns domain priors.
	learn *learning
	// now dates a request against the models' retirement dates.
	now func() time.Time
}

// autoTarget is a route's auto policy turned into shares.
type autoTarget struct {
	cal *calibration.Calibrator // nil: the shipped calibration only
	// strong is the share of auto-routed requests meant for the stronger
	// models (medium and complex), complex the share meant for the best.
	strong, complex float64
	minSamples      int
}

type options struct {
	cx     complexity.Config
	cal    *calibration.Calibrator
	priors *priors.Learner
}

// Option adjusts a router at construction.
type Option func(*options)

// WithComplexityModel scores complexity with model instead of the shipped
// one (the routing benchmark routes with models trained without the data
// they are scored on).
func WithComplexityModel(m *complexity.Model) Option {
	return func(o *options) { o.cx.Model = m }
}

// WithCalibration reads an auto route's thresholds from c, which learns
// them from the deployment's traffic.
func WithCalibration(c *calibration.Calibrator) Option {
	return func(o *options) { o.cal = c }
}

// WithPriors lets a route with routing.learn learn its domains' priors
// in l.
func WithPriors(l *priors.Learner) Option {
	return func(o *options) { o.priors = l }
}

// NewRouter builds a router for a route; h and sticky may be nil.
func NewRouter(p *policy.Policy, r *policy.Route, h Health, sticky filters.StickyStore, opts ...Option) (*Router, error) {
	o := options{cx: complexity.Config{MediumAt: r.Routing.MediumAt, ComplexAt: r.Routing.ComplexAt}}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := complexity.New(o.cx)
	if err != nil {
		return nil, err
	}
	rt := &Router{route: r, pol: p, classifier: c, health: h, sticky: sticky, now: time.Now}
	if a := r.Routing.Auto; a != nil {
		share := a.StrongShare
		if a.QualityTarget > 0 {
			curve, err := complexity.DefaultCurve()
			if err != nil {
				return nil, err
			}
			share = curve.ShareFor(a.QualityTarget)
		}
		rt.auto = &autoTarget{cal: o.cal, strong: share, complex: share / 2, minSamples: a.MinSamples}
		if o.cal != nil {
			t := calibration.Target{Share: share, HalfLife: a.Window, MinSamples: a.MinSamples}
			if j := a.Adjust; j != nil {
				t.Adjust = &calibration.Adjust{Min: j.Min, Max: j.Max, Bar: j.QualityBar}
			}
			o.cal.Track(r.Name, t)
		}
	}
	if r.Routing.Learn != nil && o.priors != nil {
		if rt.learn, err = newLearning(o.priors, r); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

// StrongShare is the share of auto-routed requests an auto route sends
// to its stronger models, and false on a route with fixed thresholds.
func (r *Router) StrongShare() (float64, bool) {
	if r.auto == nil {
		return 0, false
	}
	return r.auto.strong, true
}

// levels returns the thresholds of the medium and complex levels for a
// request: an auto route's are read from its tenant's recent traffic.
func (r *Router) levels(q *Query) (medium, complex float64) {
	a := r.auto
	if a == nil {
		return r.route.Routing.MediumAt, r.route.Routing.ComplexAt
	}
	if a.cal == nil {
		return 1 - a.strong, 1 - a.complex
	}
	t := tenantName(q.Tenant)
	// Feedback may have moved the tenant's or the route's share
	// (routing.auto.adjust).
	strong := a.cal.Share(r.route.Name, t, a.strong)
	medium, _ = a.cal.Threshold(r.route.Name, t, strong, a.minSamples)
	complex, _ = a.cal.Threshold(r.route.Name, t, strong/2, a.minSamples)
	return medium, max(complex, medium)
}

// signals are the request's features, computed only when a rule or the
// strategy needs them.
type signals struct {
	q *Query
	c *complexity.Classifier
	// levels yields the thresholds the score is classed with.
	levels    func(*Query) (medium, complex float64)
	tokens    int
	need      policy.Capability
	scored    bool
	score     float64
	level     complexity.Level
	text      string
	textDone  bool
	lang      string
	sensitive *string
	// named is the model the client named and alias the alias it named
	// it by, which its key's list may hold instead of the model.
	named *policy.Model
	alias string
	// learn shifts the score by the request's domain's prior; domain
	// and shift are what it found.
	learn  *learning
	domain *priors.Domain
	shift  float64
}

func (s *signals) allText() string {
	if !s.textDone {
		var b strings.Builder
		for i := range s.q.Chat.Messages {
			if t := s.q.Chat.Messages[i].Content.PlainText(); t != "" {
				b.WriteString(t)
				b.WriteByte('\n')
			}
		}
		s.text, s.textDone = b.String(), true
	}
	return s.text
}

func (s *signals) complexity() (float64, complexity.Level) {
	if !s.scored {
		msgs := make([]complexity.Message, 0, len(s.q.Chat.Messages))
		for i := range s.q.Chat.Messages {
			m := &s.q.Chat.Messages[i]
			msgs = append(msgs, complexity.Message{Role: m.Role, Text: m.Content.PlainText()})
		}
		s.score = s.c.Score(&complexity.Request{Messages: msgs, Tools: len(s.q.Chat.Tools)})
		if s.learn != nil {
			s.domain = s.learn.domain(s.q)
			s.shift = s.domain.Shift()
		}
		medium, complex := s.levels(s.q)
		s.level, s.scored = complexity.LevelAt(s.score+s.shift, medium, complex), true
	}
	return s.score, s.level
}

func (s *signals) isSensitive() bool {
	if s.sensitive == nil {
		ctx := s.q.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		// A scan cut short finds nothing: the request is gone anyway.
		kind, _ := redact.Scan(ctx, s.allText())
		s.sensitive = &kind
	}
	return *s.sensitive != ""
}

func (s *signals) language() string {
	if s.lang == "" {
		s.lang = DetectLanguage(s.allText())
	}
	return s.lang
}

func newSignals(q *Query, c *complexity.Classifier, levels func(*Query) (float64, float64), learn *learning) *signals {
	s := &signals{q: q, c: c, levels: levels, learn: learn, tokens: openaiapi.EstimatePromptTokens(q.Chat), need: policy.CapChat}
	if q.Chat.Stream {
		s.need |= policy.CapStream
	}
	if q.Chat.UsesTools() {
		s.need |= policy.CapTools
	}
	if q.Chat.HasImages() {
		s.need |= policy.CapVision
	}
	if q.Chat.WantsJSON() {
		s.need |= policy.CapJSON
	}
	return s
}

// matches reports whether rule r's condition holds.
func (s *signals) matches(w *policy.When) bool {
	if w.TokenCountAbove > 0 && s.tokens <= w.TokenCountAbove {
		return false
	}
	if w.RequiresTool && s.need&policy.CapTools == 0 {
		return false
	}
	if w.RequiresVision && s.need&policy.CapVision == 0 {
		return false
	}
	for k, v := range w.Header {
		if s.q.Header == nil || s.q.Header(k) != v {
			return false
		}
	}
	for k, v := range w.Metadata {
		if s.q.Chat.Metadata[k] != v {
			return false
		}
	}
	if len(w.Complexity) > 0 {
		_, lv := s.complexity()
		if !slices.Contains(w.Complexity, lv.String()) {
			return false
		}
	}
	if len(w.Language) > 0 && !slices.Contains(w.Language, s.language()) {
		return false
	}
	if len(w.Topic) > 0 {
		text := strings.ToLower(s.allText())
		if !slices.ContainsFunc(w.Topic, func(k string) bool { return strings.Contains(text, k) }) {
			return false
		}
	}
	if w.Sensitive && !s.isSensitive() {
		return false
	}
	return true
}

// Decide chooses the plan for a request.
func (r *Router) Decide(q *Query) (Decision, *openaiapi.Error) {
	cfg := &r.route.Routing
	s := newSignals(q, r.classifier, r.levels, r.learn)
	var d Decision
	explicit := q.Chat.Model != cfg.AutoModel
	var (
		named *policy.Model
		res   policy.Resolution
	)
	if explicit {
		res = r.pol.Resolve(q.Chat.Model)
		explicit, named, s.alias = !res.Auto, res.Model, res.Alias
	}
	if explicit {
		if named == nil || !named.Caps.Has(policy.CapChat) {
			return d, notFound(q.Chat.Model, res.Refused)
		}
		if !policy.MayServe(q.Key, q.Tenant, named, s.alias) {
			return d, openaiapi.Errorf(http.StatusForbidden, openaiapi.TypePermission, "model_not_allowed",
				"your key may not use the model '%s'", q.Chat.Model).WithParam("model")
		}
		var e *openaiapi.Error
		if named, e = r.unretired(q, named, &d); e != nil {
			return d, e
		}
		s.named = named
		s.learn = nil // a named model is the client's choice, not a domain's
	}

	// The rule that applies, if any; a sensitive request is always held
	// to self-hosted models, whoever named the model.
	var rule *policy.Rule
	for i := range cfg.Rules {
		if s.matches(&cfg.Rules[i].When) {
			rule = &cfg.Rules[i]
			break
		}
	}
	sensitiveOnly := (rule != nil && rule.When.Sensitive) || r.sensitiveRouteNeeded(s)

	var chain []*policy.Model
	override := explicit && cfg.AllowOverride && (rule != nil || (sensitiveOnly && !named.SelfHosted))
	if explicit && !override {
		if sensitiveOnly && !named.SelfHosted {
			return d, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "sensitive_content",
				"the request holds sensitive data (%s) and this route sends such data only to self-hosted models; '%s' is not one", *s.sensitive, named.Name)
		}
		if !named.Caps.Has(s.need) {
			return d, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_capability",
				"the model '%s' does not support %s", named.Name, missing(named.Caps, s.need)).WithParam("model")
		}
		if e := r.contextCheck(q, s, named); e != nil {
			return d, e
		}
		fb := named.Fallback
		if len(fb) == 0 {
			fb = cfg.Fallback
		}
		chain = append([]*policy.Model{named}, fb...)
		d.Reason = "model named by the client"
		if s.alias != "" {
			d.Reason += " as " + s.alias
		}
		if d.Substituted != "" {
			d.Reason += "; retired, substituted: " + d.Substituted
		}
	} else {
		pool := r.candidates(q, s, rule, sensitiveOnly)
		if len(pool) == 0 {
			if e := r.contextCheck(q, s, r.largestContext()); e != nil {
				return d, e
			}
		}
		if rule != nil {
			d.Reason = "rule " + rule.Name
		} else {
			d.Reason = "strategy " + string(r.strategy(q))
		}
		if res.Auto {
			d.Reason += "; alias " + res.Alias + " of auto"
		}
		if r.auto != nil {
			// Every auto-routed request is scored, so the calibration
			// sees the route's traffic as it is, not only where a rule
			// happened to ask.
			score, _ := s.complexity()
			if r.auto.cal != nil {
				// The shifted score: the calibration holds the route's
				// share while the domains trade strong calls.
				r.auto.cal.Observe(r.route.Name, tenantName(q.Tenant), max(score+s.shift, 0))
			}
		}
		if s.learn != nil {
			_, level := s.complexity()
			s.domain.Routed(level != complexity.Simple)
			d.Domain = s.domain
			d.Reason += s.learn.reason(s.shift)
		}
		d.Ranked = r.rank(q, s, pool)
		for _, c := range d.Ranked {
			chain = append(chain, c.Model)
		}
		chain = r.prefer(q, s, chain, &d)
		chain = append(chain, cfg.Fallback...)
	}
	if s.scored {
		d.Score, d.Level = s.score, s.level
	}
	r.admit(q, s, chain, sensitiveOnly, &d)
	if len(d.Plan) == 0 {
		return d, openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "no_model_available",
			"no model can serve this request right now: %s", d.Reason)
	}
	return d, nil
}

// sensitiveRouteNeeded reports whether the route holds sensitive requests
// to self-hosted models at all (it has a sensitive rule) and this request
// is one.
func (r *Router) sensitiveRouteNeeded(s *signals) bool {
	for i := range r.route.Routing.Rules {
		if r.route.Routing.Rules[i].When.Sensitive {
			return s.isSensitive()
		}
	}
	return false
}

func (r *Router) allowed(q *Query, s *signals, m *policy.Model) bool {
	if m == s.named {
		return policy.MayServe(q.Key, q.Tenant, m, s.alias)
	}
	return policy.MayServe(q.Key, q.Tenant, m, "")
}

// notFound is the 404 of a name no model serves; a pattern that matched
// it but serves only the catalog's models says so.
func notFound(name string, closed *policy.Pattern) *openaiapi.Error {
	e := openaiapi.Errorf(http.StatusNotFound, openaiapi.TypeInvalidRequest, "model_not_found",
		"the model '%s' does not exist or you do not have access to it", name).WithParam("model")
	if closed != nil {
		e.Message += fmt.Sprintf("; %s on provider %s serves only the models the gateway's catalog prices", closed.Match, closed.Provider.Name)
	}
	return e
}

// unretired is the model that serves a request for m: m itself while
// its vendor has not retired it (or the policy serves retired models as
// named), else its successor when the policy substitutes; otherwise an
// error naming the successor.
func (r *Router) unretired(q *Query, m *policy.Model, d *Decision) (*policy.Model, *openaiapi.Error) {
	now := r.now()
	if !m.RetiredAt(now) || r.pol.Gateway.RetiredModels == policy.RetiredServe {
		return m, nil
	}
	next := r.pol.Successor(m, func(s *policy.Model) bool { return s.RetiredAt(now) })
	if next != nil && r.pol.Gateway.RetiredModels == policy.RetiredSubstitute {
		if !policy.MayServe(q.Key, q.Tenant, next, "") {
			return nil, openaiapi.Errorf(http.StatusForbidden, openaiapi.TypePermission, "model_not_allowed",
				"the model '%s' was retired by its vendor on %s, and your key may not use its successor '%s'", m.Name, m.RetiredOn.Format(time.DateOnly), next.Name).WithParam("model")
		}
		d.Substituted = m.Name + " -> " + next.Name
		return next, nil
	}
	return nil, retiredError(m, next)
}

// retiredError is the 404 of a retired model, naming its successor.
func retiredError(m, next *policy.Model) *openaiapi.Error {
	e := openaiapi.Errorf(http.StatusNotFound, openaiapi.TypeInvalidRequest, "model_retired",
		"the model '%s' was retired by its vendor on %s", m.Name, m.RetiredOn.Format(time.DateOnly)).WithParam("model")
	switch {
	case next != nil:
		e.Message += fmt.Sprintf("; use '%s' instead", next.Name)
	case m.Successor != "":
		e.Message += fmt.Sprintf("; its successor '%s' is not served by this gateway", m.Successor)
	}
	return e
}

// candidates are the models that can serve the request at all.
func (r *Router) candidates(q *Query, s *signals, rule *policy.Rule, sensitiveOnly bool) []*policy.Model {
	from := r.pol.Models
	if rule != nil {
		from = rule.RouteTo
	}
	out := make([]*policy.Model, 0, len(from))
	for _, m := range from {
		if r.fits(q, s, m) && (!sensitiveOnly || m.SelfHosted) && (q.Pressure != PressureCheapOnly || m.Cheap) {
			out = append(out, m)
		}
	}
	return out
}

// contextCheck refuses, before any provider is called, a request whose
// estimated prompt plus output cap cannot fit m's context window.
func (r *Router) contextCheck(q *Query, s *signals, m *policy.Model) *openaiapi.Error {
	if m == nil {
		return nil
	}
	out := r.outputNeed(q, m)
	if s.tokens+out <= m.ContextWindow {
		return nil
	}
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "context_length_exceeded",
		"this model's maximum context length is %d tokens; the request needs about %d (%d in the messages, %d for the completion)",
		m.ContextWindow, s.tokens+out, s.tokens, out).WithParam("messages")
}

func (r *Router) largestContext() *policy.Model {
	var best *policy.Model
	for _, m := range r.pol.Models {
		if m.Caps.Has(policy.CapChat) && (best == nil || m.ContextWindow > best.ContextWindow) {
			best = m
		}
	}
	return best
}

// fits reports whether m can serve the request: capabilities, context
// window, allowlists.
func (r *Router) fits(q *Query, s *signals, m *policy.Model) bool {
	if !m.Caps.Has(s.need) || !r.allowed(q, s, m) {
		return false
	}
	return s.tokens+r.outputNeed(q, m) <= m.ContextWindow
}

// outputNeed is the room for output m's context window must leave the
// prompt: the request's output cap, or on a route that fits the cap to
// the window (fit_output_to_context) a single token, the cap then being
// what the window leaves.
func (r *Router) outputNeed(q *Query, m *policy.Model) int {
	if r.route.FitOutputToContext {
		return 1
	}
	return m.OutputLimit(q.Chat.OutputCap())
}

// prefer moves the models a tier, a split or stickiness asks for to the
// front of an auto-routed chain.
func (r *Router) prefer(q *Query, s *signals, chain []*policy.Model, d *Decision) []*policy.Model {
	cfg := &r.route.Routing
	front := func(m *policy.Model, why string) {
		if i := slices.Index(chain, m); i > 0 {
			chain = append([]*policy.Model{m}, slices.Delete(chain, i, i+1)...)
			d.Reason += "; " + why
		}
	}
	if q.Tenant != nil && cfg.Tiers[q.Tenant.Tier] != nil {
		tier := cfg.Tiers[q.Tenant.Tier]
		for i := len(tier) - 1; i >= 0; i-- {
			front(tier[i], "tier "+q.Tenant.Tier)
		}
	}
	if sp := cfg.Split; sp != nil {
		if bucket(q.User, q.Hash) < uint64(sp.Percent) && slices.Contains(chain, sp.Model) {
			front(sp.Model, fmt.Sprintf("split %d%% to %s", sp.Percent, sp.Model.Name))
			d.Split = sp.Model.Name
		} else {
			d.Split = "control"
		}
	}
	if r.sticky != nil && q.User != "" && cfg.Stickiness > 0 {
		if m, ok := r.sticky.Get(r.route.Name, tenantName(q.Tenant), q.User); ok {
			if mm := r.pol.Model(m); mm != nil && slices.Contains(chain, mm) {
				front(mm, "sticky for user")
			}
		}
	}
	return chain
}

// bucket places a user (or, without one, a request) in 0..99.
func bucket(user string, hash uint64) uint64 {
	if user == "" {
		return hash % 100
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(user))
	return h.Sum64() % 100
}

// admit expands the chain's models into their deployments, each model's
// spread by its balance, and walks them through the health monitor:
// unavailable deployments and open breakers are skipped, the rest keep
// their order; duplicates and models that cannot serve the request are
// dropped.
func (r *Router) admit(q *Query, s *signals, chain []*policy.Model, sensitiveOnly bool, d *Decision) {
	seen := make(map[*policy.Model]bool, len(chain))
	var skipped, last []string
	// Deployments whose provider's name resolved to no address are tried
	// after the others: Envoy does not retry an attempt without an
	// address, so one first would end the request.
	var unreachable []*policy.Model
	firstWeight := 1.0 // the health weight of the plan's first target
	for _, model := range chain {
		if seen[model] || len(d.Plan)+len(unreachable) >= r.route.Attempts {
			continue
		}
		seen[model] = true
		if !r.fits(q, s, model) || (sensitiveOnly && !model.SelfHosted) || (q.Pressure == PressureCheapOnly && !model.Cheap) {
			continue
		}
		for _, m := range r.spread(model, q.Hash, q.Chat.Stream) {
			if len(d.Plan)+len(unreachable) >= r.route.Attempts {
				break
			}
			if r.health != nil {
				a := r.health.Admit(m.Provider.Name, m.Series(), q.Hash)
				if !a.Allowed {
					skipped = append(skipped, deploymentName(m)+" ("+a.Reason+")")
					continue
				}
				if a.Probe && len(d.Plan) > 0 {
					// A half-open breaker's probe goes first, so its result
					// comes back and the breaker can close.
					d.Plan = append([]*policy.Model{m}, d.Plan...)
					d.Reason += "; probing " + m.Provider.Name
					continue
				}
				if a.NoAddress != "" {
					unreachable = append(unreachable, m)
					last = append(last, deploymentName(m)+" ("+a.NoAddress+")")
					continue
				}
				if len(d.Plan) == 0 {
					firstWeight = a.Weight
				}
			}
			d.Plan = append(d.Plan, m)
		}
	}
	r.yieldDegraded(q, s, firstWeight, d)
	d.Plan = append(d.Plan, unreachable...)
	if len(skipped) > 0 {
		d.Reason += "; skipped " + strings.Join(skipped, ", ")
	}
	if len(last) > 0 {
		d.Reason += "; no address, tried last: " + strings.Join(last, ", ")
	}
}

// yieldDegraded gives a degraded model a client named the routing weight
// degraded models get when the router chooses (the seed's level 1:
// weight × 0.5): that share of its requests, drawn by the request's hash,
// go to its first fallback first, and it follows as that one's fallback.
// A model of several deployments needs none of this: its deployments'
// balance already weighs a degraded one down.
func (r *Router) yieldDegraded(q *Query, s *signals, weight float64, d *Decision) {
	if s.named == nil || weight >= 1 || len(d.Plan) < 2 || d.Plan[0].Name != s.named.Name || len(s.named.Deployments) > 1 {
		return
	}
	// Not the canary's draw (key % 1000), so the two do not pick the
	// same requests.
	if (q.Hash>>20)%1000 < uint64(math.Round(weight*1000)) {
		return
	}
	i := slices.IndexFunc(d.Plan, func(m *policy.Model) bool { return m.Name != s.named.Name })
	if i < 0 {
		return
	}
	backup := d.Plan[i]
	d.Plan = append([]*policy.Model{backup}, slices.Delete(d.Plan, i, i+1)...)
	d.Reason += "; " + s.named.Name + " degraded: " + backup.Name + " first for this request"
}

// deploymentName names a deployment in reasons: the model's name, with
// its provider when the model has several deployments.
func deploymentName(m *policy.Model) string {
	if len(m.Deployments) > 1 {
		return m.Provider.Name + "/" + m.Name
	}
	return m.Name
}

func missing(have, need policy.Capability) string {
	var out []string
	for name, c := range map[string]policy.Capability{"tools": policy.CapTools, "vision": policy.CapVision, "json output": policy.CapJSON, "streaming": policy.CapStream} {
		if need&c != 0 && have&c == 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// HashID turns a request ID into the per-request hash of a Query.
func HashID(id string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return h.Sum64()
}

// tenantName is the tenant's name, "" on a route without auth.
func tenantName(t *policy.Tenant) string {
	if t == nil {
		return ""
	}
	return t.Name
}
