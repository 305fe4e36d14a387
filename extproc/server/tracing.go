package server

import (
	"context"
	"slices"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/metadata"

	"github.com/switchyard/switchyard/extproc/tracing"
	"github.com/switchyard/switchyard/filters"
)

// traceHeaders are the W3C trace context headers. Envoy's tracer sets
// them on each attempt, naming its span of the attempt; with tracing on a
// provider gets them (so a self-hosted model's spans join the trace),
// with tracing off no client's reach it.
var traceHeaders = []string{"traceparent", "tracestate"}

// beginTrace opens x's trace under Envoy's span of the request, which
// Envoy's tracer sends in the metadata of the request's stream (the
// request's own headers still hold the client's traceparent), and names
// the trace in the answer.
func beginTrace(ctx context.Context, t *tracing.Tracer, x *filters.Exchange) {
	if t == nil {
		return
	}
	x.Trace = t.Begin(first(metadata.ValueFromIncomingContext(ctx, "traceparent")), first(metadata.ValueFromIncomingContext(ctx, "tracestate")))
	x.SetResponseHeader(filters.HeaderTraceID, x.Trace.ID())
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// keepTraceHeaders drops the trace context headers from a list of headers
// to withhold from the provider, when the request is traced.
func keepTraceHeaders(x *filters.Exchange, remove []string) []string {
	if x.Trace == nil {
		return remove
	}
	return slices.DeleteFunc(remove, func(k string) bool { return slices.Contains(traceHeaders, k) })
}

// stampTrace names the trace in an answer ext_proc makes itself (a
// refusal, a reply of a filter's); answers from a provider get it with
// the other response headers.
func stampTrace(resp *extprocv3.ProcessingResponse, lv *live) {
	ir := resp.GetImmediateResponse()
	if ir == nil || lv == nil || lv.x.Trace == nil {
		return
	}
	if ir.Headers == nil {
		ir.Headers = &extprocv3.HeaderMutation{}
	}
	ir.Headers.SetHeaders = append(ir.Headers.SetHeaders, &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: filters.HeaderTraceID, RawValue: []byte(lv.x.Trace.ID())},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	})
}
