package tracing

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
)

const testPolicy = `
gateway:
  tracing: {collector: "127.0.0.1:4317", sample_ratio: 0.5, keep_slower_than: 10s, content: {tenants: [spy], max_bytes: 256}}
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:9101"}
  - {name: an, kind: anthropic, base_url: "https://api.anthropic.com"}
models:
  - {name: gpt, provider: oa, upstream: gpt-4o, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, stream], price_usd_per_mtok: {input: 1, output: 2}}
  - {name: claude, provider: an, upstream: claude-sonnet-4-5, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, stream], price_usd_per_mtok: {input: 3, output: 15}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, translate, usage]}
tenants:
  - {name: acme, keys: [{name: acme-web, sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}]}
  - {name: spy, keys: [{name: spy-key, sha256: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"}]}
`

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func compiled(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func tenant(p *policy.Policy, name string) *policy.Tenant {
	for _, t := range p.Tenants {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// envoySpan is Envoy's span of a request as its metadata names it.
var envoySpan = trace.NewSpanContext(trace.SpanContextConfig{
	TraceID:    trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
	SpanID:     trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
	TraceFlags: trace.FlagsSampled, Remote: true,
})

const envoyTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// tracer is a Tracer of testPolicy whose pipeline records spans.
func tracer(t *testing.T, p *policy.Policy) (*Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(ids{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	m := NewMetrics(prometheus.NewRegistry())
	return &Tracer{cfg: p.Gateway.Tracing, m: m, p: &Pipeline{tracer: tp.Tracer("test"), m: m, queue: make(chan job, 1)}}, rec
}

func TestBeginContinuesEnvoysTrace(t *testing.T) {
	p := compiled(t)
	tr, _ := tracer(t, p)
	tests := []struct {
		name        string
		traceparent string
		wantParent  bool
	}{
		{name: "Envoy's span", traceparent: envoyTraceparent, wantParent: true},
		{name: "none: ext_proc starts the trace"},
		{name: "malformed: ext_proc starts the trace", traceparent: "00-xyz-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tr.Begin(tt.traceparent, "")
			if got.Parent.IsValid() != tt.wantParent || !got.Span.IsValid() {
				t.Fatalf("parent %v, span %v", got.Parent, got.Span)
			}
			if tt.wantParent && (got.Span.TraceID() != envoySpan.TraceID() || got.Span.SpanID() == envoySpan.SpanID() || !got.Span.IsSampled()) {
				t.Errorf("span %v does not continue Envoy's %v as its sampled child", got.Span, envoySpan)
			}
			if !tt.wantParent && got.ID() == envoySpan.TraceID().String() {
				t.Error("a trace without a parent reused another's ID")
			}
		})
	}
}

// TestSampledByRatio: a trace ext_proc starts is sampled by its ID, at
// the ratio, the same way every time.
func TestSampledByRatio(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ratio := range []float64{0, 0.01, 0.5, 1} {
		n, sampled := 20000, 0
		for range n {
			var id trace.TraceID
			for i := range id {
				id[i] = byte(rng.UintN(256))
			}
			got := sampledByRatio(id, ratio)
			if got != sampledByRatio(id, ratio) {
				t.Fatal("the decision for one ID changed")
			}
			if got {
				sampled++
			}
		}
		if share := float64(sampled) / float64(n); share < ratio-0.02 || share > ratio+0.02 {
			t.Errorf("ratio %v sampled %v of traces", ratio, share)
		}
	}
}

// exchange is a chat request of tenant that fell back from gpt (503) to
// claude, which streamed its answer.
func exchange(t *testing.T, p *policy.Policy, tr *Tracer, traceparent, tenantName string) *filters.Exchange {
	t.Helper()
	tokens := 64
	x := &filters.Exchange{
		ID: "req-1", Started: t0, Policy: p, Route: p.Route("/v1/chat/completions"),
		Chat: &openaiapi.ChatRequest{Model: "gpt", Stream: true, MaxTokens: &tokens, Messages: []openaiapi.Message{
			{Role: "system", Content: openaiapi.Content{Text: "You help.", Set: true}},
			{Role: "user", Content: openaiapi.Content{Text: "my key is sk-FAKEfakefakefakefakefake, mail ana@example.com", Set: true}},
		}},
		Plan:        []filters.Target{{Model: p.Model("gpt")}, {Model: p.Model("claude")}},
		RouteReason: "model named by the client",
	}
	x.Caller = filters.Caller{Tenant: tenant(p, tenantName), KeyName: tenantName + "-key", App: "web"}
	x.Trace = tr.Begin(traceparent, "")
	a1, _ := x.NewAttempt(1, t0.Add(time.Millisecond))
	a1.MarkSent(t0.Add(2 * time.Millisecond))
	a1.Finish(filters.Outcome{Status: http.StatusServiceUnavailable, Latency: 5 * time.Millisecond})
	a2, _ := x.NewAttempt(2, t0.Add(8*time.Millisecond))
	a2.MarkSent(t0.Add(9 * time.Millisecond))
	a2.Finish(filters.Outcome{Status: http.StatusOK, Latency: 20 * time.Millisecond})
	x.Response = filters.Response{Status: http.StatusOK, Streaming: true}
	x.Usage = filters.Usage{Known: true, PromptTokens: 21, CompletionTokens: 7, CostMicros: 168}
	x.Sent = filters.Sent{FirstToken: t0.Add(40 * time.Millisecond), Text: []byte("Hello there"), Complete: true}
	tr.Observe(x, []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"claude-sonnet-4-5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"), false)
	return x
}

func TestDecide(t *testing.T) {
	p := compiled(t)
	tr, _ := tracer(t, p)
	const unsampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	tests := []struct {
		name        string
		traceparent string
		edit        func(x *filters.Exchange) error
		end         time.Duration
		wantKept    bool
	}{
		{name: "sampled by Envoy", traceparent: envoyTraceparent, end: time.Second, wantKept: true},
		{name: "fell back, outside the sample", traceparent: unsampled, end: time.Second, wantKept: true},
		{name: "served at once, outside the sample", traceparent: unsampled, end: time.Second, wantKept: false,
			edit: func(x *filters.Exchange) error { x.Plan = x.Plan[:1]; return nil }},
		{name: "slow, outside the sample", traceparent: unsampled, end: 11 * time.Second, wantKept: true,
			edit: func(x *filters.Exchange) error { x.Plan = x.Plan[:1]; return nil }},
		{name: "the gateway's failure, outside the sample", traceparent: unsampled, end: time.Second, wantKept: true,
			edit: func(x *filters.Exchange) error {
				x.Plan = x.Plan[:1]
				return filters.Reject(http.StatusServiceUnavailable, openaiapi.TypeServer, "overloaded", "busy")
			}},
		{name: "the client's mistake, outside the sample", traceparent: unsampled, end: time.Second, wantKept: false,
			edit: func(x *filters.Exchange) error {
				x.Plan = x.Plan[:1]
				return filters.Reject(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "bad", "bad")
			}},
		{name: "a stream cut by an error event, outside the sample", traceparent: unsampled, end: time.Second, wantKept: true,
			edit: func(x *filters.Exchange) error { x.Plan = x.Plan[:1]; x.Sent.ErrorType = "server_error"; return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := &filters.Exchange{ID: "r", Started: t0, Route: p.Route("/v1/chat/completions"), Plan: []filters.Target{{Model: p.Model("gpt")}, {Model: p.Model("claude")}}}
			x.Trace = tr.Begin(tt.traceparent, "")
			var cause error
			if tt.edit != nil {
				cause = tt.edit(x)
			}
			for n := range x.Plan {
				a, _ := x.NewAttempt(n+1, t0)
				st := http.StatusOK
				if n+1 < len(x.Plan) {
					st = http.StatusTooManyRequests
				}
				a.Finish(filters.Outcome{Status: st})
			}
			tr.Decide(x, cause, t0.Add(tt.end))
			if x.Trace.Kept() != tt.wantKept {
				t.Errorf("kept %v, want %v", x.Trace.Kept(), tt.wantKept)
			}
		})
	}
}

// spanTree is what a test checks of a span: its name, its parent's name
// (or the remote parent's ID), a few attributes.
type spanTree struct {
	Name, Parent string
	Status       codes.Code
}

func TestBuildSpans(t *testing.T) {
	p := compiled(t)
	tr, rec := tracer(t, p)
	x := exchange(t, p, tr, envoyTraceparent, "acme")
	// The chain's steps: auth and router on the request side, translate
	// on each attempt.
	record(x, "auth", filterspec.PhaseRequestHeaders, 0)
	record(x, "router", filterspec.PhaseRequestBody, 0)
	record(x, "translate", filterspec.PhaseAttempt, 1)
	record(x, "translate", filterspec.PhaseAttempt, 2)
	end := t0.Add(50 * time.Millisecond)
	tr.Decide(x, nil, end)
	if !x.Trace.Kept() {
		t.Fatal("a sampled trace was not kept")
	}
	build(tr.p.tracer, job{x: x, end: end})
	spans := rec.Ended()
	if len(spans) != spanCount(x) {
		t.Fatalf("%d spans, spanCount says %d", len(spans), spanCount(x))
	}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	var got []spanTree
	for _, s := range spans {
		parent := s.Parent().SpanID().String()
		if ps, ok := byID[s.Parent().SpanID()]; ok {
			parent = ps.Name()
		}
		if s.SpanContext().TraceID() != envoySpan.TraceID() {
			t.Errorf("span %s is in trace %s, not Envoy's", s.Name(), s.SpanContext().TraceID())
		}
		got = append(got, spanTree{Name: s.Name(), Parent: parent, Status: s.Status().Code})
	}
	want := []spanTree{
		{Name: "switchyard.auth", Parent: "switchyard chat"},
		{Name: "switchyard.router", Parent: "switchyard chat"},
		{Name: "switchyard.translate", Parent: "chat gpt-4o"},
		{Name: "chat gpt-4o", Parent: "switchyard chat", Status: codes.Error},
		{Name: "switchyard.translate", Parent: "chat claude-sonnet-4-5"},
		{Name: "chat claude-sonnet-4-5", Parent: "switchyard chat"},
		{Name: "switchyard chat", Parent: envoySpan.SpanID().String()},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("spans (-want +got):\n%s", d)
	}
	req := spans[len(spans)-1]
	if req.SpanContext().SpanID() != x.Trace.Span.SpanID() || req.SpanKind() != trace.SpanKindServer {
		t.Errorf("request span %v kind %v, want the ID drawn at the start, a server span", req.SpanContext().SpanID(), req.SpanKind())
	}
	wantAttrs := map[string]map[attribute.Key]attribute.Value{
		"switchyard chat": {
			"switchyard.tenant": attribute.StringValue("acme"), "switchyard.key_name": attribute.StringValue("acme-key"),
			"switchyard.route": attribute.StringValue("chat"), "switchyard.cost_micro_usd": attribute.Int64Value(168),
			"switchyard.fallback_count": attribute.IntValue(1), "switchyard.cache_hit": attribute.BoolValue(false),
			"gen_ai.request.model": attribute.StringValue("gpt"), "gen_ai.operation.name": attribute.StringValue("chat"),
		},
		"chat gpt-4o": {
			"gen_ai.provider.name": attribute.StringValue("openai"), "gen_ai.request.model": attribute.StringValue("gpt-4o"),
			"error.type": attribute.StringValue("503"), "switchyard.blame": attribute.StringValue("provider"),
			"switchyard.attempt": attribute.IntValue(1),
		},
		"chat claude-sonnet-4-5": {
			"gen_ai.provider.name": attribute.StringValue("anthropic"), "gen_ai.request.model": attribute.StringValue("claude-sonnet-4-5"),
			"gen_ai.response.model": attribute.StringValue("claude-sonnet-4-5"), "gen_ai.response.id": attribute.StringValue("chatcmpl-1"),
			"gen_ai.response.finish_reasons": attribute.StringSliceValue([]string{"stop"}),
			"gen_ai.usage.input_tokens":      attribute.IntValue(21), "gen_ai.usage.output_tokens": attribute.IntValue(7),
			"gen_ai.request.max_tokens": attribute.IntValue(64), "gen_ai.request.stream": attribute.BoolValue(true),
			"switchyard.translation": attribute.StringValue("openai→anthropic"), "server.address": attribute.StringValue("api.anthropic.com"),
		},
		"switchyard.router": {"switchyard.route_reason": attribute.StringValue("model named by the client"),
			"switchyard.plan": attribute.StringSliceValue([]string{"gpt", "claude"})},
	}
	for _, s := range spans {
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		for k, v := range wantAttrs[s.Name()] {
			if attrs[k] != v {
				t.Errorf("span %s: %s = %v, want %v", s.Name(), k, attrs[k].String(), v.String())
			}
		}
		for _, e := range s.Events() {
			if e.Name == eventContent {
				t.Errorf("span %s records content with content off", s.Name())
			}
		}
	}
	var ttft bool
	for _, e := range byName(spans, "chat claude-sonnet-4-5").Events() {
		ttft = ttft || (e.Name == eventFirstToken && e.Time.Equal(x.Sent.FirstToken))
	}
	if !ttft {
		t.Error("the answering attempt has no first-token event")
	}
}

func byName(spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// record adds a step the chain would have timed.
func record(x *filters.Exchange, filter string, p filterspec.Phase, attempt int) {
	c := filters.NewChain([]filters.Filter{stepFilter(filter)})
	switch p {
	case filterspec.PhaseAttempt:
		for _, a := range x.Attempts() {
			if a.N == attempt {
				_ = c.Attempt(context.Background(), x, a)
			}
		}
	default:
		_ = c.RequestHeaders(context.Background(), x)
	}
}

type stepFilter string

func (f stepFilter) Name() string                                                     { return string(f) }
func (stepFilter) RequestHeaders(context.Context, *filters.Exchange) error            { return nil }
func (stepFilter) Attempt(context.Context, *filters.Exchange, *filters.Attempt) error { return nil }

// TestContentIsOptInMaskedAndBounded: only a tenant listed gets its
// prompt and answer on the trace, masked, each list within max_bytes.
func TestContentIsOptInMaskedAndBounded(t *testing.T) {
	p := compiled(t)
	tr, rec := tracer(t, p)
	x := exchange(t, p, tr, envoyTraceparent, "spy")
	x.Sent.Text = []byte(strings.Repeat("word ", 200))
	end := t0.Add(50 * time.Millisecond)
	tr.Decide(x, nil, end)
	build(tr.p.tracer, job{x: x, end: end, content: p.Gateway.Tracing.ContentMaxBytes})
	var in, out string
	for _, e := range byName(rec.Ended(), "chat claude-sonnet-4-5").Events() {
		if e.Name != eventContent {
			continue
		}
		for _, kv := range e.Attributes {
			switch kv.Key {
			case genaiInputMessages:
				in = kv.Value.AsString()
			case genaiOutputMessages:
				out = kv.Value.AsString()
			}
		}
	}
	if in == "" || out == "" {
		t.Fatalf("no content event on the answering attempt: input %q, output %q", in, out)
	}
	if strings.Contains(in, "sk-FAKE") || strings.Contains(in, "ana@example.com") || !strings.Contains(in, "[secret]") {
		t.Errorf("the prompt is not masked: %s", in)
	}
	if !strings.Contains(in, `"role":"system"`) || !strings.Contains(in, `"type":"text"`) {
		t.Errorf("the prompt is not in the conventions' shape: %s", in)
	}
	if len(out) > 256+200 || !strings.Contains(out, cutMark) {
		t.Errorf("the answer (%d bytes) is not bounded to 256 bytes of text: %s", len(out), out)
	}
}

func TestObserve(t *testing.T) {
	p := compiled(t)
	tr, _ := tracer(t, p)
	tests := []struct {
		name   string
		chunks []string
		whole  bool
		want   filters.ResponseFacts
	}{
		{name: "chat completion, pretty-printed", whole: true,
			chunks: []string{"{\n  \"id\": \"chatcmpl-9\",\n  \"model\": \"gpt-4o-2024-08-06\",\n  \"choices\": [{\"message\": {\"content\": \"say \\\"model\\\": x\"}, \"finish_reason\": \"length\"}]}"},
			want:   filters.ResponseFacts{ID: "chatcmpl-9", Model: "gpt-4o-2024-08-06", FinishReasons: []string{"length"}}},
		{name: "chat stream, reasons in the last chunk",
			chunks: []string{`data: {"id":"c1","model":"m1","choices":[{"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n",
				`data: {"id":"c1","model":"m1","choices":[{"delta":{},"finish_reason":"stop"},{"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"},
			want: filters.ResponseFacts{ID: "c1", Model: "m1", FinishReasons: []string{"stop", "tool_calls"}}},
		{name: "messages stream",
			chunks: []string{"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null}}\n\n",
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n"},
			want: filters.ResponseFacts{ID: "msg_1", Model: "claude-sonnet-4-5", FinishReasons: []string{"end_turn"}}},
		{name: "not JSON", chunks: []string{`{"id": 12, "model"`}, whole: true, want: filters.ResponseFacts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := &filters.Exchange{Route: p.Route("/v1/chat/completions")}
			x.Trace = tr.Begin(envoyTraceparent, "")
			for _, c := range tt.chunks {
				tr.Observe(x, []byte(c), tt.whole)
			}
			if d := cmp.Diff(tt.want, x.Trace.Response); d != "" {
				t.Errorf("facts (-want +got):\n%s", d)
			}
		})
	}
}

// TestCollectorDownDropsAndCounts: with no collector to take them, spans
// are dropped and counted, and a request handing its trace over never
// waits for it.
func TestCollectorDownDropsAndCounts(t *testing.T) {
	p := compiled(t)
	cfg := *p.Gateway.Tracing
	cfg.Host, cfg.Port, cfg.Collector = "127.0.0.1", 1, "127.0.0.1:1" // nothing listens on port 1
	reg := prometheus.NewRegistry()
	ps := NewPipelines(reg, discard())
	tr, err := ps.Tracer(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = ps.Close(ctx)
	}()
	for range 2 * queuedTraces {
		x := exchange(t, p, tr, envoyTraceparent, "acme")
		tr.Decide(x, nil, t0.Add(time.Second))
		tr.Export(x, nil, t0.Add(time.Second))
	}
	dropped := func() float64 {
		return testutil.ToFloat64(ps.m.dropped.WithLabelValues("queue_full")) + testutil.ToFloat64(ps.m.dropped.WithLabelValues("export_failed"))
	}
	deadline := time.Now().Add(30 * time.Second)
	for dropped() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if dropped() == 0 {
		t.Fatal("no span counted as dropped with the collector down")
	}
	if got := testutil.ToFloat64(ps.m.exported); got != 0 {
		t.Errorf("%v spans counted as exported to no collector", got)
	}
}

func TestProviderNames(t *testing.T) {
	tests := []struct {
		kind    policy.Kind
		dialect string
		want    string
	}{
		{policy.KindOpenAI, "", "openai"},
		{policy.KindAzureOpenAI, "", "azure.ai.openai"},
		{policy.KindAnthropic, "", "anthropic"},
		{policy.KindGemini, "", "gcp.gemini"},
		{policy.KindOpenAICompatible, "mistral", "mistral_ai"},
		{policy.KindOpenAICompatible, "vllm", "vllm"},
		{policy.KindOpenAICompatible, "", "openai_compatible"},
	}
	for _, tt := range tests {
		if got := providerName(&policy.Provider{Kind: tt.kind, Dialect: tt.dialect}); got != tt.want {
			t.Errorf("%s/%s: got %q, want %q", tt.kind, tt.dialect, got, tt.want)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestPipelinesFollowReloads: a reload that keeps the collector keeps its
// pipeline (and what it queued), one that changes it gets a new one, and
// one without tracing none.
func TestPipelinesFollowReloads(t *testing.T) {
	ps := NewPipelines(prometheus.NewRegistry(), discard())
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = ps.Close(ctx)
	}()
	grpc := &policy.Tracing{Collector: "127.0.0.1:1", Host: "127.0.0.1", Port: 1, Protocol: policy.TraceGRPC, SampleRatio: 1}
	ratio := *grpc
	ratio.SampleRatio = 0.1
	overHTTP := *grpc
	overHTTP.Protocol = policy.TraceHTTP
	first, err := ps.Tracer(grpc)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name     string
		cfg      *policy.Tracing
		wantNil  bool
		wantSame bool
	}{
		{name: "another sample ratio, the same collector", cfg: &ratio, wantSame: true},
		{name: "another protocol", cfg: &overHTTP},
		{name: "tracing off", wantNil: true},
	}
	prev := first
	for _, s := range steps {
		got, err := ps.Tracer(s.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if (got == nil) != s.wantNil {
			t.Fatalf("%s: tracer %v", s.name, got)
		}
		if got != nil && (got.p == prev.p) != s.wantSame {
			t.Errorf("%s: same pipeline %v, want %v", s.name, got.p == prev.p, s.wantSame)
		}
		if got != nil {
			if got.cfg != s.cfg {
				t.Errorf("%s: the tracer does not follow the new policy", s.name)
			}
			prev = got
		}
	}
	// A request of a replaced pipeline's policy ends after it closed: its
	// trace is dropped, counted, and nothing panics.
	x := exchange(t, compiled(t), first, envoyTraceparent, "acme")
	first.Decide(x, nil, t0.Add(time.Second))
	deadline := time.Now().Add(10 * time.Second)
	for {
		first.p.mu.RLock()
		closed := first.p.closed
		first.p.mu.RUnlock()
		if closed || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	first.Export(x, nil, t0.Add(time.Second))
	if got := testutil.ToFloat64(ps.m.dropped.WithLabelValues("queue_full")); got != float64(spanCount(x)) {
		t.Errorf("dropped %v spans of a request ending after its pipeline closed, want %d", got, spanCount(x))
	}
}
