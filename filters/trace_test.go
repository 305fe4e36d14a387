package filters_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/filters"
)

// noting is a filter whose request-headers hook notes a fact, or refuses.
type noting struct {
	name   string
	note   attribute.KeyValue
	refuse bool
}

func (f noting) Name() string { return f.name }

func (f noting) RequestHeaders(_ context.Context, x *filters.Exchange) error {
	x.Trace.Note(f.note)
	if f.refuse {
		return filters.Reject(http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "slow down")
	}
	return nil
}

func (f noting) Attempt(_ context.Context, x *filters.Exchange, a *filters.Attempt) error { return nil }

// TestChainRecordsSteps: with a trace, each hook's run is a step with its
// filter, phase, attempt, notes and refusal, in order; without one the
// chain runs the same and records nothing.
func TestChainRecordsSteps(t *testing.T) {
	c := filters.NewChain([]filters.Filter{
		noting{name: "quota", note: filters.BudgetLeft(42), refuse: true},
		noting{name: "auth", note: attribute.String("switchyard.tenant", "acme")},
	})
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})
	tests := []struct {
		name  string
		trace *filters.Trace
		want  []string // filter/phase/attempt/refused of each step
	}{
		{name: "tracing off"},
		{name: "traced", trace: filters.NewTrace(trace.SpanContext{}, sc, nil),
			want: []string{"auth request headers 0 false", "quota request headers 0 true", "auth attempt 2 false", "quota attempt 2 false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := &filters.Exchange{ID: "r", Trace: tt.trace}
			if err := c.RequestHeaders(context.Background(), x); err == nil {
				t.Fatal("the quota filter's refusal was lost")
			}
			if err := c.Attempt(context.Background(), x, &filters.Attempt{N: 2}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range x.Trace.Steps() {
				got = append(got, fmt.Sprintf("%s %s %d %v", s.Filter, s.Phase, s.Attempt, s.Err != nil))
				if s.End.Before(s.Start) {
					t.Errorf("step %s ends before it starts", s.Filter)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("steps %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("step %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
			if tt.trace == nil {
				if x.Trace.ID() != "" || x.Trace.Notes() != nil || x.Trace.Kept() {
					t.Error("a nil trace names a trace, holds notes or is kept")
				}
				return
			}
			notes := x.Trace.Notes()
			if len(notes) != 2 || notes[0].Key != "switchyard.tenant" || notes[1] != filters.BudgetLeft(42) {
				t.Errorf("notes %v, want the tenant then the budget left", notes)
			}
			if x.Trace.ID() != sc.TraceID().String() {
				t.Errorf("ID %q, want %q", x.Trace.ID(), sc.TraceID())
			}
		})
	}
}

// TestStartLinkedOnlyForKeptTraces: work linked to a request is traced
// only when the request's trace is kept.
func TestStartLinkedOnlyForKeptTraces(t *testing.T) {
	var nilTrace *filters.Trace
	_, span := nilTrace.StartLinked(context.Background(), "judge")
	if span.SpanContext().IsValid() {
		t.Error("tracing off started a span")
	}
	tr := filters.NewTrace(trace.SpanContext{}, trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}}), nil)
	_, span = tr.StartLinked(context.Background(), "judge")
	if span.SpanContext().IsValid() {
		t.Error("a trace not kept started a linked span")
	}
}
