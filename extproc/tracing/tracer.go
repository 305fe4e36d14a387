package tracing

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// Tracer is what one policy version asks of tracing: its sample ratio,
// the duration past which a request is kept, whose content is recorded,
// and the pipeline of its collector. A nil *Tracer traces nothing.
type Tracer struct {
	cfg *policy.Tracing
	p   *Pipeline
	m   *Metrics
}

// Begin opens the trace of a request whose Envoy span is traceparent
// (with tracestate), as Envoy's tracer sends it in the metadata of the
// request's ext_proc stream. Without one (Envoy traces nothing for a
// request whose traceparent it could not read) ext_proc starts the trace,
// sampled by the policy's ratio.
func (t *Tracer) Begin(traceparent, tracestate string) *filters.Trace {
	parent := Parent(traceparent, tracestate)
	cfg := trace.SpanContextConfig{SpanID: newSpanID(), TraceState: parent.TraceState()}
	if parent.IsValid() {
		cfg.TraceID, cfg.TraceFlags = parent.TraceID(), parent.TraceFlags()
	} else {
		cfg.TraceID = newTraceID()
		if sampledByRatio(cfg.TraceID, t.cfg.SampleRatio) {
			cfg.TraceFlags = trace.FlagsSampled
		}
	}
	return filters.NewTrace(parent, trace.NewSpanContext(cfg), t.p.Tracer())
}

// Parent reads a W3C trace context; the result is invalid when
// traceparent is absent or malformed.
func Parent(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), c))
}

// Decide keeps the trace of a request that is over, before its Done hooks
// run (the judge links its gradings to kept ones): when its trace was
// sampled, or whatever the sample when it failed, fell back or took
// longer than keep_slower_than.
func (t *Tracer) Decide(x *filters.Exchange, cause error, end time.Time) {
	if t == nil || x.Trace == nil {
		return
	}
	switch {
	case x.Trace.Span.IsSampled():
		t.m.sampled.Inc()
	case failed(x, cause) || end.Sub(x.Started) >= t.cfg.KeepSlowerThan:
		t.m.kept.Inc()
	default:
		t.m.unkept.Inc()
		return
	}
	x.Trace.Keep(true)
}

// Export hands a kept request's trace to the pipeline, after its Done
// hooks have run (the usage is final then); it never waits.
func (t *Tracer) Export(x *filters.Exchange, cause error, end time.Time) {
	if t == nil || !x.Trace.Kept() {
		return
	}
	j := job{x: x, cause: cause, end: end}
	tenant := ""
	if x.Caller.Tenant != nil {
		tenant = x.Caller.Tenant.Name
	}
	if x.Route != nil && t.cfg.Captures(x.Route.Name, tenant) {
		j.content = t.cfg.ContentMaxBytes
	}
	t.p.enqueue(j)
}

// failed reports whether a request ended in a way worth a trace whatever
// the sample: the gateway's or a provider's failure (5xx), a stream cut by
// an error event, or an attempt given up for another (a fallback).
func failed(x *filters.Exchange, cause error) bool {
	if status(x, cause) >= http.StatusInternalServerError || x.Sent.ErrorType != "" {
		return true
	}
	for _, a := range x.Attempts() {
		if a.Outcome().Failed() {
			return true
		}
	}
	return false
}

// status is the status the client got: the refusal's, or the answer's.
func status(x *filters.Exchange, cause error) int {
	var e *openaiapi.Error
	if errors.As(cause, &e) {
		return e.Status
	}
	return x.Response.Status
}
