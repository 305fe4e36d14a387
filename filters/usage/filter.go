package usage

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/translator"
)

func init() { filters.Register("usage", New) }

// StatusClientClosed is the status recorded for a request whose client
// left before the answer was complete (nginx's 499): the client never got
// a full answer, whatever status its headers carried.
const StatusClientClosed = 499

// ErrorClientDisconnected is the error type of such a request.
const ErrorClientDisconnected = "client_disconnected"

// Filter records usage.
type Filter struct {
	log     *slog.Logger
	metrics *metrics
	ledger  *ledger.Writer
	events  *events.Publisher
	audit   *audit.Logger
	now     func() time.Time
}

// New builds the usage filter.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	if err := filterspec.NoArgs(ref); err != nil {
		return nil, err
	}
	return &Filter{log: deps.Log(), metrics: metricsFor(deps.Metrics), ledger: deps.Ledger, events: deps.Events, audit: deps.Audit, now: time.Now}, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "usage" }

// CacheProvider is the provider of a ledger row the response cache
// answered; no provider of a policy may take the name.
const CacheProvider = policy.CacheProvider

// Complete implements [filters.CompleteHook]: the record as it stands is
// held in the ledger's spool until Done writes the final one, so that a
// client never has an answer the ledger could lose to a crash.
func (f *Filter) Complete(_ context.Context, x *filters.Exchange) {
	if f.ledger != nil && f.ledger.Holding() && !anonymous(x) {
		f.ledger.Hold(RecordOf(x, nil, f.now()))
	}
}

// anonymous reports a refusal before any caller is known: it belongs to
// nobody, and as ledger rows and audit lines anyone with the address could
// fill both.
func anonymous(x *filters.Exchange) bool {
	return x.Caller.Tenant == nil && x.Response.Status == http.StatusUnauthorized
}

// Done implements [filters.DoneHook].
func (f *Filter) Done(ctx context.Context, x *filters.Exchange, cause error) {
	if anonymous(x) {
		if f.ledger != nil {
			f.ledger.Release(x.ID)
		}
		route := ""
		if x.Route != nil {
			route = x.Route.Name
		}
		f.metrics.anonymous.WithLabelValues(route).Inc()
		return
	}
	r := RecordOf(x, cause, f.now())
	if f.ledger != nil {
		f.ledger.Write(r)
	}
	if f.events != nil {
		f.events.Write(r)
	}
	f.metrics.observe(x, &r)
	f.audit.Request(ctx, auditEvent(x, &r))
	// The record is in the ledger, the metrics, the audit trail and Envoy's
	// access log already: a line of its own in the log is for debugging,
	// not a write per request on the hot path.
	if !f.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	f.log.LogAttrs(ctx, slog.LevelDebug, "usage",
		slog.String("request_id", r.RequestID), slog.String("tenant", r.Tenant), slog.String("app", r.App),
		slog.String("key", r.KeyName), slog.String("route", r.Route), slog.String("model", r.RequestedModel),
		slog.String("served_model", r.ServedModel), slog.String("provider", r.Provider), slog.Bool("stream", r.Stream),
		slog.Int("attempts", r.Attempts), slog.Any("fallback_reasons", r.FallbackReasons), slog.Int("status", r.Status),
		slog.String("error_type", r.ErrorType), slog.Int64("prompt_tokens", r.InputTokens),
		slog.Int64("completion_tokens", r.OutputTokens), slog.Int64("cached_tokens", r.CachedTokens),
		slog.Bool("usage_estimated", r.UsageEstimated), slog.Int64("cost_micros", r.CostMicros),
		slog.Duration("latency", r.Latency), slog.Duration("ttft", r.TimeToFirstToken))
}

// strongest is, for a chat request whose model the router chose, the
// highest-quality chat model the caller may use (the pricier on a tie):
// the one an all-strong deployment would have sent it to. Nil when the
// client named the model.
func strongest(x *filters.Exchange) *policy.Model {
	if x.Chat == nil || x.Route == nil || x.Policy == nil || x.Chat.Model != x.Route.Routing.AutoModel {
		return nil
	}
	return x.Policy.Strongest(func(m *policy.Model) bool { return policy.MayUse(x.Caller.Key, x.Caller.Tenant, m.Name) })
}

// RecordOf builds the ledger record of an exchange that ended with cause
// (nil when the answer completed) at end.
func RecordOf(x *filters.Exchange, cause error, end time.Time) ledger.Record {
	r := ledger.Record{
		RequestID: x.ID, Time: x.Started, App: x.Caller.App, KeyName: x.Caller.KeyName,
		RequestedModel: x.RequestedModel(), Stream: x.Response.Streaming,
		Status: x.Response.Status, Latency: end.Sub(x.Started),
		InputTokens: int64(x.Usage.PromptTokens), OutputTokens: int64(x.Usage.CompletionTokens),
		CachedTokens: int64(x.Usage.CachedTokens), CostMicros: x.Usage.CostMicros,
		CacheHit: x.Usage.CachedTokens > 0, UsageEstimated: x.Usage.Estimated,
		TraceID: x.Trace.ID(), Tags: x.Labels.Tags, SessionID: x.Session(),
	}
	if x.Route != nil {
		r.Route = x.Route.Name
	}
	if x.Caller.Tenant != nil {
		r.Tenant = x.Caller.Tenant.Name
	}
	if !x.Sent.FirstToken.IsZero() {
		r.TimeToFirstToken = x.Sent.FirstToken.Sub(x.Started)
	}
	r.Attempts = x.AttemptCount()
	if a := x.LastAttempt(); a != nil {
		r.ServedModel, r.Provider, r.PriceSource = a.Target.Model.Name, a.Target.Provider().Name, string(a.Target.Model.PriceSource)
	}
	if x.Cached.How != "" {
		// The answer came from the response cache, at no provider cost.
		r.ServedModel, r.Provider, r.SavedMicros, r.PriceSource = x.Cached.Model, CacheProvider, x.Cached.SavedMicros, ""
	}
	r.FallbackReasons = fallbackReasons(x)
	r.RouteReason = x.RouteReason
	r.RoutingScore = x.Routing.Score
	if d := x.Routing.Domain; d != nil {
		r.Domain = d.Key().Hex()
	}
	if m := strongest(x); m != nil {
		r.StrongCostMicros = m.Price.Micros(x.Usage.Tokens())
	}
	switch {
	case errors.Is(cause, filters.ErrClientGone):
		r.Status, r.ErrorType = StatusClientClosed, ErrorClientDisconnected
	case cause != nil:
		e := filters.AsError(cause, x.ID)
		r.ErrorType = e.Type
		if r.Status == 0 {
			r.Status = e.Status
		}
	case x.Sent.ErrorType != "":
		// The headers said 200, then the stream ended in an error event.
		r.ErrorType = x.Sent.ErrorType
	case r.Status >= http.StatusBadRequest:
		// A provider's error or one of Envoy's own replies, passed through.
		r.ErrorType = translator.ErrorType(r.Status)
	}
	return r
}

// fallbackReasons says why each failed attempt was given up, in attempt
// order, as "provider/model: status", "provider/model: no response", or
// for the attempts that lost a race (a hedge's, a hybrid answer's) or
// judged it, why it was not theirs ("provider/model: hedge lost"). An
// attempt whose stream never reached ext_proc (a connection refused at
// once) is known only by its number, and gave no response.
func fallbackReasons(x *filters.Exchange) []string {
	var reasons []string
	for _, f := range failures(x) {
		reasons = append(reasons, f.target.Provider().Name+"/"+f.target.Model.Name+": "+f.reason)
	}
	return reasons
}

// failure is one failed attempt.
type failure struct {
	n      int
	target filters.Target
	// reason is the provider's status, or "no response".
	reason string
}

// failures lists the failed attempts of x in order.
func failures(x *filters.Exchange) []failure {
	attempts := x.Attempts()
	if len(attempts) == 0 {
		return nil
	}
	last := attempts[len(attempts)-1].N
	seen := make(map[int]*filters.Attempt, len(attempts))
	for _, a := range attempts {
		seen[a.N] = a
	}
	var out []failure
	for n := 1; n <= last; n++ {
		a := seen[n]
		if a == nil {
			out = append(out, failure{n: n, target: x.Plan[min(n, len(x.Plan))-1], reason: noResponse})
			continue
		}
		switch o := a.Outcome(); {
		case x.Hybrid != nil && n != x.Hybrid.Picked && !o.Failed():
			reason := hybridNotPicked
			if n == x.Hybrid.Judged {
				reason = hybridJudge
			}
			out = append(out, failure{n: n, target: a.Target, reason: reason})
		case x.Hybrid != nil && o.Cause == filters.CauseHedged:
			out = append(out, failure{n: n, target: a.Target, reason: hybridCancelled})
		case o.Cause == filters.CauseHedged:
			out = append(out, failure{n: n, target: a.Target, reason: hedgeLost})
		case o.Failed() && o.Status == 0:
			out = append(out, failure{n: n, target: a.Target, reason: noResponse})
		case o.Failed():
			out = append(out, failure{n: n, target: a.Target, reason: strconv.Itoa(o.Status)})
		}
	}
	return out
}

const noResponse = "no response"

// The reasons of attempts that did not give the answer without failing:
// a hedge's loser, cancelled when the other attempt answered first; a
// hybrid answer's other targets, answered and not picked, or cancelled
// when another was picked first; and its judge's call.
const (
	hedgeLost       = "hedge lost"
	hybridNotPicked = "hybrid: not picked"
	hybridCancelled = "hybrid: cancelled"
	hybridJudge     = "hybrid: judge"
)

var _ filters.DoneHook = (*Filter)(nil)
