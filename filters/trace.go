package filters

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/filters/filterspec"
)

// Trace is what the gateway notes about one exchange for its trace, while
// the request runs; extproc/tracing turns it into spans once the request
// is over and its trace is kept. [Exchange.Trace] is nil when tracing is
// off, and every method is then a no-op: a filter calls them without
// asking.
//
// The request's stream writes the steps of the request side and the
// response facts; attempts' streams write the steps of their attempts.
type Trace struct {
	// Parent is the span the request's spans hang under: Envoy's call to
	// ext_proc, which continues the client's traceparent. Invalid when
	// ext_proc started the trace itself.
	Parent trace.SpanContext
	// Span is ext_proc's span of the request. Its IDs are drawn when the
	// request arrives, so that the response, the access log, the audit
	// line, the ledger row and work linked to the request name it before
	// the span itself is built.
	Span trace.SpanContext
	// Response is what the answer said of itself, read by extproc/tracing
	// as it passes.
	Response ResponseFacts

	tracer trace.Tracer
	kept   atomic.Bool

	mu    sync.Mutex
	steps []Step
	notes []attribute.KeyValue
}

// NewTrace returns the trace of one exchange; tracer starts the traces
// linked to it ([Trace.StartLinked]).
func NewTrace(parent, span trace.SpanContext, tracer trace.Tracer) *Trace {
	return &Trace{Parent: parent, Span: span, tracer: tracer}
}

// Step is one filter hook's run, timed.
type Step struct {
	Filter string
	Phase  filterspec.Phase
	// Attempt numbers the attempt of an attempt hook, 0 otherwise.
	Attempt    int
	Start, End time.Time
	Err        error
	// Notes are what the filter said about its run ([Trace.Note]).
	Notes []attribute.KeyValue
}

// ResponseFacts are what an answer says of itself: its ID, the model
// that made it and why each choice stopped.
type ResponseFacts struct {
	ID            string
	Model         string
	FinishReasons []string
	// Text is a buffered answer's text, kept only when the trace records
	// content (a stream's is [Sent.Text]).
	Text string
}

// ID returns the trace ID in hex, as W3C traceparent spells it; "" when
// tracing is off.
func (t *Trace) ID() string {
	if t == nil {
		return ""
	}
	return t.Span.TraceID().String()
}

// Note adds facts about the hook under way to its step, and to the
// request's span: the quota filter notes the budget left. Keys are the
// gateway's own (switchyard.*).
func (t *Trace) Note(kv ...attribute.KeyValue) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.notes = append(t.notes, kv...)
	t.mu.Unlock()
}

// BudgetLeft is the note the quota filter leaves: the least the caller
// has left of any of its budgets once the request's reservation is made,
// in micro-USD.
func BudgetLeft(micros int64) attribute.KeyValue {
	return attribute.Int64("switchyard.budget_left_micro_usd", micros)
}

// Steps returns the steps run so far, in the order they ended.
func (t *Trace) Steps() []Step {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Step(nil), t.steps...)
}

// Notes returns every fact noted, for the request's span.
func (t *Trace) Notes() []attribute.KeyValue {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []attribute.KeyValue
	for _, s := range t.steps {
		out = append(out, s.Notes...)
	}
	return append(out, t.notes...)
}

// Keep records whether the trace is exported; it is decided once the
// request is over, before its Done hooks run.
func (t *Trace) Keep(kept bool) {
	if t != nil {
		t.kept.Store(kept)
	}
}

// Kept reports whether the trace is exported.
func (t *Trace) Kept() bool { return t != nil && t.kept.Load() }

// StartLinked starts the root span of a new trace for work done on the
// request's behalf after it ended (the judge's grading), linked to the
// request's span. Its trace is sampled when the request's was kept; ctx
// carries the span, so calls made with it propagate its context. With
// tracing off the span is a no-op one.
func (t *Trace) StartLinked(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil || t.tracer == nil || !t.Kept() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.tracer.Start(ctx, name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithLinks(trace.Link{SpanContext: t.Span}), trace.WithAttributes(attrs...))
}

// clock starts timing a hook: the zero time when tracing is off, so that
// it costs no clock read.
func (t *Trace) clock() time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Now()
}

// record ends the step of filter f's hook begun at start, with the notes
// taken meanwhile.
func (t *Trace) record(f any, p filterspec.Phase, attempt int, start time.Time, err error) {
	if t == nil {
		return
	}
	name := ""
	if n, ok := f.(Filter); ok {
		name = n.Name()
	}
	end := time.Now()
	t.mu.Lock()
	t.steps = append(t.steps, Step{Filter: name, Phase: p, Attempt: attempt, Start: start, End: end, Err: err, Notes: t.notes})
	t.notes = nil
	t.mu.Unlock()
}
