// Package router is the filter that chooses which models serve a request
// and in which order their providers are tried.
//
// On the request side it turns the route's routing policy into a plan:
// rules first (in order; the first match restricts the candidates), then
// the strategy (cost-optimized, quality-first, latency-first, weighted,
// overridable per tenant), tier preferences, A/B splits and per-user
// stickiness, then the health monitor, which skips unavailable models and
// open breakers. Envoy tries the plan's providers in order (see
// xds/resources). On the way back it names the fallback count and the
// reason on every answer, replaces a failure of every attempt with one 503
// that lists them, and feeds every attempt's outcome to the health monitor.
package router

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/state/health"
)

func init() { filters.Register("router", New) }

// Filter chooses the plan of targets for a request.
type Filter struct {
	router *Router
	health Health
	sticky filters.StickyStore
	log    *slog.Logger
	// inflight ends each attempt's count under way: *filters.Attempt →
	// func().
	inflight sync.Map
}

// New builds the router filter of one route.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	if err := filterspec.NoArgs(ref); err != nil {
		return nil, err
	}
	var h Health
	if deps.Health != nil {
		h = deps.Health
	}
	var opts []Option
	if deps.Calibration != nil {
		opts = append(opts, WithCalibration(deps.Calibration))
	}
	if deps.Priors != nil {
		opts = append(opts, WithPriors(deps.Priors))
	}
	if deps.Probes != nil {
		opts = append(opts, WithProbes(deps.Probes))
	}
	r, err := NewRouter(deps.Policy, deps.Route, h, deps.Sticky, opts...)
	if err != nil {
		return nil, err
	}
	return &Filter{router: r, health: h, sticky: deps.Sticky, log: deps.Log()}, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "router" }

// RequestBody implements [filters.RequestBodyHook].
func (f *Filter) RequestBody(ctx context.Context, x *filters.Exchange) error {
	if x.Embeddings != nil {
		return f.embeddings(x)
	}
	if x.Chat == nil {
		return nil
	}
	if f.hybridRequested(x) {
		return f.hybrid(x)
	}
	q := &Query{
		Ctx:      ctx,
		Chat:     x.Chat,
		Header:   x.Header.Get,
		Tenant:   x.Caller.Tenant,
		Key:      x.Caller.Key,
		App:      x.Caller.App,
		User:     user(x),
		Hash:     HashID(x.ID),
		Pressure: Pressure(x.Pressure),
	}
	d, err := f.router.Decide(q)
	if err != nil {
		return err
	}
	x.Plan = make([]filters.Target, len(d.Plan))
	for i, m := range d.Plan {
		x.Plan[i] = filters.Target{Model: m}
	}
	x.RouteReason = d.Reason
	x.Hedge = f.hedge(x)
	x.Routing = filters.Routing{Split: d.Split, Score: d.Score, Substituted: d.Substituted, Domain: d.Domain}
	if d.Score > 0 {
		x.Routing.Level = d.Level.String()
	}
	if f.log.Enabled(ctx, slog.LevelDebug) {
		ranked := make([]string, len(d.Ranked))
		for i, c := range d.Ranked {
			ranked[i] = c.Model.Name + "=" + strconv.FormatFloat(c.Score, 'f', 3, 64)
		}
		plan := make([]string, len(d.Plan))
		for i, m := range d.Plan {
			plan[i] = m.Name
		}
		f.log.LogAttrs(ctx, slog.LevelDebug, "routing decision", slog.String("request_id", x.ID),
			slog.String("requested", x.Chat.Model), slog.Any("candidates", ranked), slog.Any("plan", plan),
			slog.String("reason", d.Reason), slog.String("complexity", d.Level.String()), slog.Float64("score", d.Score))
	}
	return nil
}

// embeddings plans an embeddings request: the named model only, since
// vectors from another model live in another space and a fallback would
// silently corrupt the caller's index; its deployments serve one model,
// so they fail over to each other.
func (f *Filter) embeddings(x *filters.Exchange) error {
	name := x.Embeddings.Model
	res := x.Policy.Resolve(name)
	m := res.Model
	if m == nil || !m.Caps.Has(policy.CapEmbeddings) {
		return filters.Reject(http.StatusNotFound, openaiapi.TypeInvalidRequest, "model_not_found",
			"the embedding model '%s' does not exist or you do not have access to it", name).WithParam("model")
	}
	if !policy.MayServe(x.Caller.Key, x.Caller.Tenant, m, res.Alias) {
		return filters.Reject(http.StatusForbidden, openaiapi.TypePermission, "model_not_allowed", "your key may not use the model '%s'", name).WithParam("model")
	}
	if m.RetiredAt(f.router.now()) && x.Policy.Gateway.RetiredModels != policy.RetiredServe {
		// Never substituted: another model's vectors live in another
		// space, and the caller's index would silently mix the two.
		return retiredError(m, x.Policy.Successor(m, func(s *policy.Model) bool { return s.RetiredAt(f.router.now()) }))
	}
	key := HashID(x.ID)
	var skipped []string
	for _, d := range f.router.spread(m, key, false) {
		if len(x.Plan) == f.router.route.Attempts {
			break
		}
		if f.health != nil {
			if a := f.health.Admit(d.Provider.Name, d.Series(), key); !a.Allowed {
				skipped = append(skipped, deploymentName(d)+" ("+a.Reason+")")
				continue
			}
		}
		x.Plan = append(x.Plan, filters.Target{Model: d})
	}
	if len(x.Plan) == 0 {
		return filters.Reject(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "no_model_available",
			"the model '%s' cannot serve right now (%s)", name, strings.Join(skipped, ", "))
	}
	x.RouteReason = "embedding model named by the client"
	x.Hedge = f.hedge(x)
	return nil
}

// user is the end user a request speaks for: OpenAI's user field, else
// the X-Switchyard-User header (or its first spelling, X-User-Id).
func user(x *filters.Exchange) string {
	if x.Chat.User != "" {
		return x.Chat.User
	}
	if u := x.Header.Get(filters.HeaderUser); u != "" {
		return u
	}
	return x.Header.Get(filters.HeaderUserLegacy)
}

// Attempt implements [filters.AttemptHook]: the attempt counts as under
// way on its deployment (the least_in_flight balance) until it fails or
// the request ends.
func (f *Filter) Attempt(_ context.Context, _ *filters.Exchange, a *filters.Attempt) error {
	if f.health != nil {
		f.inflight.Store(a, f.health.Begin(a.Target.Provider().Name, a.Target.Model.Series()))
	}
	return nil
}

// ended ends the count of attempt a under way, if it was counted.
func (f *Filter) ended(a *filters.Attempt) {
	if end, ok := f.inflight.LoadAndDelete(a); ok {
		end.(func())()
	}
}

// AttemptDone implements [filters.AttemptDoneHook]: every attempt's
// outcome, including the ones Envoy retried, feeds the health monitor.
//
// A streamed answer that started well is observed in Done instead, once
// its time to first token is known.
func (f *Filter) AttemptDone(_ context.Context, x *filters.Exchange, a *filters.Attempt) {
	if a.Outcome().Failed() {
		f.ended(a)
	}
	if f.health == nil || (streamed(x) && !a.Outcome().Failed()) {
		return
	}
	f.observe(x, a, 0)
}

func streamed(x *filters.Exchange) bool { return x.Chat != nil && x.Chat.Stream }

func (f *Filter) observe(x *filters.Exchange, a *filters.Attempt, ttft time.Duration) {
	out := a.Outcome()
	o := health.Observation{
		Provider: a.Target.Provider().Name,
		Model:    a.Target.Model.Series(),
		Status:   out.Status,
		Latency:  out.Latency,
		TTFT:     ttft,
		Quota:    out.Quota,
		Key:      HashID(x.ID),
		Detail:   out.Failure,
	}
	if o.Status == 0 {
		switch out.Cause {
		case filters.CauseTimeout:
			o.Failure = health.Timeout
		case filters.CauseExcused, filters.CauseHedged:
			// The client left, the gateway gave up, or another attempt of a
			// hedge answered first: the monitor ignores it.
			o.Failure = health.Canceled
		case filters.CauseNoAddress:
			o.Failure = health.NoAddress
		default:
			o.Failure = health.ConnectFailure
		}
	}
	f.health.Observe(o)
}

// ResponseHeaders implements [filters.ResponseHeadersHook].
func (f *Filter) ResponseHeaders(_ context.Context, x *filters.Exchange) error {
	if n := x.AttemptCount(); n > 0 {
		x.SetResponseHeader(filters.HeaderFallbackCount, strconv.Itoa(n-1))
	}
	if x.RouteReason != "" {
		x.SetResponseHeader(filters.HeaderRouteReason, headerSafe(x.RouteReason))
	}
	if x.Routing.Substituted != "" {
		x.SetResponseHeader("x-switchyard-model-substituted", x.Routing.Substituted)
	}
	if x.Hedge != nil && x.LastAttempt() != nil {
		x.SetResponseHeader(HeaderHedge, hedgeHeader(x))
	}
	return nil
}

// ResponseChunk implements [filters.ResponseChunkHook]: when every attempt
// failed, the client gets one 503 that says what happened to each (which
// provider, and for one that could not be reached, whether its name did
// not resolve, its port refused or its TLS handshake failed), in its API's
// error envelope, unless the response cache answered instead (degraded
// mode). A single attempt that got an answer passes it through: the
// provider's own error says more than a summary.
func (f *Filter) ResponseChunk(_ context.Context, x *filters.Exchange, c *filters.Chunk) error {
	if x.Response.Streaming || !c.EOS || x.Cached.How != "" {
		return nil
	}
	last := x.LastAttempt()
	if last == nil || !last.Outcome().Failed() || (last.N < 2 && last.Outcome().Status != 0) {
		return nil
	}
	seen := map[int]*filters.Attempt{}
	for _, a := range x.Attempts() {
		seen[a.N] = a
	}
	parts := make([]string, last.N)
	answered := false
	for n := 1; n <= last.N; n++ {
		a, ok := seen[n]
		if !ok {
			// The attempt failed before its stream reached ext_proc.
			m := x.Plan[min(n, len(x.Plan))-1].Model
			parts[n-1] = fmt.Sprintf("attempt %d %s/%s: no response (connect failure, reset or timeout)", n, m.Provider.Name, m.Name)
			continue
		}
		o := a.Outcome()
		answered = answered || o.Status != 0
		parts[n-1] = fmt.Sprintf("attempt %d %s/%s: %s", n, a.Target.Provider().Name, a.Target.Model.Name, describe(o))
	}
	lead := "every provider failed"
	if !answered {
		lead = "no provider could be reached"
	}
	e := openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "all_providers_failed",
		"%s: %s", lead, strings.Join(parts, "; "))
	x.Response.Status, c.Data = e.Status, x.ErrorBody(e)
	return nil
}

func describe(o filters.Outcome) string {
	switch {
	case !o.Done:
		return "no outcome"
	case o.Status == 0:
		return o.Failure
	default:
		return strconv.Itoa(o.Status) + " " + http.StatusText(o.Status)
	}
}

// Done implements [filters.DoneHook]: a served user sticks to the model
// that served them.
func (f *Filter) Done(_ context.Context, x *filters.Exchange, cause error) {
	for _, a := range x.Attempts() {
		f.ended(a)
	}
	a := x.LastAttempt()
	if f.health != nil && a != nil && a.Outcome().Done && !a.Outcome().Failed() && streamed(x) {
		var ttft time.Duration
		if from := a.Sent; !x.Sent.FirstToken.IsZero() && !from.IsZero() {
			ttft = x.Sent.FirstToken.Sub(from)
		}
		f.observe(x, a, ttft)
	}
	// Only an answer the client got whole sticks: a refusal, a provider's
	// 4xx or a stream cut short says nothing good about the model.
	if cause == nil && a != nil && x.Chat != nil && f.sticky != nil && served(a.Outcome(), x) {
		f.sticky.Set(f.router.route.Name, tenantName(x.Caller.Tenant), user(x), a.Target.Model.Name, f.router.route.Routing.Stickiness)
	}
}

// served reports whether the attempt's provider answered with success and
// the answer reached the client whole.
func served(o filters.Outcome, x *filters.Exchange) bool {
	return o.Done && o.Status >= 200 && o.Status < 300 && x.Response.Status < 300 && x.Sent.Complete && x.Sent.ErrorType == ""
}

// headerSafe keeps a reason within what an HTTP header may carry.
func headerSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	if len(b) > 512 {
		b = b[:512]
	}
	return string(b)
}

var (
	_ filters.RequestBodyHook     = (*Filter)(nil)
	_ filters.AttemptHook         = (*Filter)(nil)
	_ filters.AttemptDoneHook     = (*Filter)(nil)
	_ filters.ResponseHeadersHook = (*Filter)(nil)
	_ filters.ResponseChunkHook   = (*Filter)(nil)
	_ filters.DoneHook            = (*Filter)(nil)
)
