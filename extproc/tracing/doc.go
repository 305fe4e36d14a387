// Package tracing turns what ext_proc saw of a request into OpenTelemetry
// spans under Envoy's, with the GenAI semantic conventions' attribute
// names, and exports them over OTLP.
//
// Nothing is built while the request runs: the chain notes the timings of
// its hooks and the server a few facts of the answer ([filters.Trace]).
// When the request is over, [Tracer.Decide] keeps its trace when Envoy
// sampled it (the client's traceparent, or the policy's ratio), or when it
// failed, fell back or ran slow; a kept exchange goes to a bounded queue,
// and a worker builds its spans from it, with the times they happened, and
// hands them to the SDK's batch span processor. The request never waits
// on the collector: a full queue drops the trace, a failed export its
// spans, each counted in switchyard_tracing_spans_dropped_total.
package tracing
