package judge

import (
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/filters"
)

// TestGradingIsALinkedTrace: the grading of a request whose trace was
// kept is a trace of its own, linked to the request's span, whose calls
// through the gateway carry its context; a request not kept leaves no
// trace and its grading's calls carry none.
func TestGradingIsALinkedTrace(t *testing.T) {
	request := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xa}, SpanID: trace.SpanID{0xb}, TraceFlags: trace.FlagsSampled})
	for _, kept := range []bool{true, false} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		r := newRig(t, `{model: grader, api_key: {env: K}, gateway_url: URL}`)
		r.trace = filters.NewTrace(trace.SpanContext{}, request, tp.Tracer("test"))
		r.trace.Keep(kept)
		r.serve(t, autoBody, "weak", http.StatusOK, false)
		if got := r.outcomes(t, "weak"); got["graded"] != 1 {
			t.Fatalf("kept %v: outcomes %v, want one graded", kept, got)
		}
		spans := rec.Ended()
		r.gw.mu.Lock()
		traces := append([]string(nil), r.gw.traces...)
		r.gw.mu.Unlock()
		if !kept {
			if len(spans) != 0 || strings.Join(traces, "") != "" {
				t.Errorf("a grading of a request not kept: %d spans, calls with traceparents %q", len(spans), traces)
			}
			continue
		}
		if len(spans) != 1 {
			t.Fatalf("%d spans, want the grading's", len(spans))
		}
		g := spans[0]
		if g.Name() != "switchyard.judge" || g.Parent().IsValid() || g.SpanContext().TraceID() == request.TraceID() {
			t.Errorf("grading span %s under %v in trace %v; want a root of a trace of its own", g.Name(), g.Parent(), g.SpanContext().TraceID())
		}
		if len(g.Links()) != 1 || g.Links()[0].SpanContext.SpanID() != request.SpanID() {
			t.Errorf("grading links %v, want the request's span", g.Links())
		}
		if len(g.Events()) != 1 || g.Events()[0].Name != "gen_ai.evaluation.result" {
			t.Errorf("grading events %v, want its score", g.Events())
		}
		want := "00-" + g.SpanContext().TraceID().String() + "-" + g.SpanContext().SpanID().String() + "-01"
		if len(traces) != 2 || traces[0] != want || traces[1] != want {
			t.Errorf("the grading's calls carried %q, want %q each", traces, want)
		}
	}
}
