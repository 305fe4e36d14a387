// Package usage is the filter that records what every request consumed.
//
// Its Done hook runs once per request whatever happened — served, refused,
// failed or cut short by the client — and hands one Record to the
// configured sink. Until the durable ledger exists the sink is a structured
// log line plus Prometheus counters.
package usage

import (
	"context"
	"log/slog"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

func init() { filters.Register("usage", New) }

// Record is the accounting of one request.
type Record struct {
	RequestID      string
	Time           time.Time
	Tenant         string
	App            string
	KeyName        string
	RequestedModel string
	ServedModel    string
	Provider       string
	Attempts       int
	Status         int
	ErrorType      string
	Usage          filters.Usage
	Latency        time.Duration
}

// Filter records usage.
type Filter struct {
	log     *slog.Logger
	metrics *metrics
}

// New builds the usage filter.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	if err := filters.NoArgs(ref); err != nil {
		return nil, err
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Filter{log: log, metrics: metricsFor(deps.Metrics)}, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "usage" }

// Done implements [filters.DoneHook].
func (f *Filter) Done(ctx context.Context, x *filters.Exchange, cause error) {
	r := RecordOf(x, cause)
	f.metrics.observe(&r)
	f.log.LogAttrs(ctx, slog.LevelInfo, "usage",
		slog.String("request_id", r.RequestID), slog.String("tenant", r.Tenant), slog.String("app", r.App),
		slog.String("key", r.KeyName), slog.String("model", r.RequestedModel), slog.String("served_model", r.ServedModel),
		slog.String("provider", r.Provider), slog.Int("attempts", r.Attempts), slog.Int("status", r.Status),
		slog.Int("prompt_tokens", r.Usage.PromptTokens), slog.Int("completion_tokens", r.Usage.CompletionTokens),
		slog.Int("cached_tokens", r.Usage.CachedTokens), slog.Int64("cost_micros", r.Usage.CostMicros),
		slog.Duration("latency", r.Latency))
}

// RecordOf builds the record of an exchange.
func RecordOf(x *filters.Exchange, cause error) Record {
	r := Record{
		RequestID: x.ID, Time: x.Started, App: x.Caller.App, KeyName: x.Caller.KeyName,
		Status: x.Response.Status, Usage: x.Usage, Latency: time.Since(x.Started),
	}
	if x.Caller.Tenant != nil {
		r.Tenant = x.Caller.Tenant.Name
	}
	r.RequestedModel = x.RequestedModel()
	r.Attempts = x.AttemptCount()
	if a := x.LastAttempt(); a != nil {
		r.ServedModel, r.Provider = a.Target.Model.Name, a.Target.Provider().Name
	}
	if cause != nil {
		r.ErrorType = filters.AsError(cause, x.ID).Type
		if r.Status == 0 {
			r.Status = filters.AsError(cause, x.ID).Status
		}
	}
	return r
}

var _ filters.DoneHook = (*Filter)(nil)
