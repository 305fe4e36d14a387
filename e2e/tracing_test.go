package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// withTracing are the options of a private stack like the shared one
// whose gateway.yaml traces every request to collector.
func withTracing(t *testing.T, collector string) stack.Options {
	t.Helper()
	o := defaultOptions()
	o.Overlay = map[string]string{"gateway.yaml": localGateway(t) + "  tracing: {collector: \"" + collector + "\"}\n"}
	return o
}

// The client's trace: the gateway's spans must continue it.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	// secretPrompt must never reach the collector: content is off by
	// default.
	secretPrompt = "the ferret named Quillon hides the spare key"
)

// tracedChat sends a streamed chat completion of gpt-4o-mini with the
// client's traceparent and reads the whole stream.
func tracedChat(t *testing.T, s *stack.Stack, traceparent string) (*http.Response, string) {
	t.Helper()
	body := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"` + secretPrompt + `"}]}`
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+demoKey)
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp, b.String()
}

// TestTracesOnARealCollector sends a streamed request whose first provider
// fails through a gateway exporting to a real OpenTelemetry Collector,
// and reads the trace back: one trace, the client's, with Envoy's span
// under the client's, ext_proc's under Envoy's, one span per attempt
// with the GenAI conventions' attributes, the failed one blamed on its
// provider, and no prompt text.
func TestTracesOnARealCollector(t *testing.T) {
	root, err := stack.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	col, err := harness.StartCollector(context.Background(), root, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	o := withTracing(t, col.GRPC)
	o.SimRecordDir = t.TempDir()
	s := startStack(t, o)
	if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultDown503}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Sim.ClearFault("openai") }()

	resp, stream := tracedChat(t, s, "00-"+clientTraceID+"-"+clientSpanID+"-01")
	if resp.StatusCode != http.StatusOK || !strings.Contains(stream, "data: [DONE]") {
		t.Fatalf("status %d, stream %.300s", resp.StatusCode, stream)
	}
	if got := resp.Header.Get("X-Switchyard-Trace-Id"); got != clientTraceID {
		t.Errorf("x-switchyard-trace-id %q, want the client's trace %s", got, clientTraceID)
	}
	if got := resp.Header.Get("X-Switchyard-Fallback-Count"); got != "1" {
		t.Fatalf("fallback count %q, want 1 (openai fails, anthropic answers)", got)
	}

	// Envoy exports every second, ext_proc's batches every second: wait
	// until both the request's server span of each have arrived.
	var spans []harness.Span
	deadline := time.Now().Add(30 * time.Second)
	for {
		all, err := col.Spans()
		if err != nil {
			t.Fatal(err)
		}
		// Only the client's trace: the harness's readiness probes have
		// their own.
		spans = slices.DeleteFunc(all, func(sp harness.Span) bool { return sp.TraceID != clientTraceID })
		if find(spans, "switchyard-envoy", "ingress") != nil && find(spans, "switchyard-extproc", "switchyard chat") != nil &&
			find(spans, "switchyard-extproc", "chat claude-3-5-haiku-20241022") != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector has not received the request's spans; it has %d: %v", len(spans), names(spans))
		}
		time.Sleep(200 * time.Millisecond)
	}
	byID := map[string]harness.Span{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	ingress := find(spans, "switchyard-envoy", "ingress")
	if ingress.TraceID != clientTraceID || ingress.ParentID != clientSpanID {
		t.Errorf("Envoy's span is in trace %s under %s; want the client's trace %s under its span %s", ingress.TraceID, ingress.ParentID, clientTraceID, clientSpanID)
	}
	req := find(spans, "switchyard-extproc", "switchyard chat")
	// ext_proc's request span hangs under Envoy's span of its ext_proc
	// call, itself under Envoy's request span.
	call, ok := byID[req.ParentID]
	if !ok || call.Service != "switchyard-envoy" || call.ParentID != ingress.SpanID {
		t.Errorf("ext_proc's span's parent %s (%s, %s) is not Envoy's call under its request span %s", req.ParentID, call.Service, call.Name, ingress.SpanID)
	}
	if req.Attributes["switchyard.tenant"] != "demo" || req.Attributes["switchyard.fallback_count"] != int64(1) ||
		req.Attributes["gen_ai.request.model"] != "gpt-4o-mini" || req.Attributes["switchyard.route"] != "chat" {
		t.Errorf("request span attributes %v", req.Attributes)
	}
	if _, ok := req.Attributes["switchyard.cost_micro_usd"]; !ok {
		t.Errorf("the request span has no cost: %v", req.Attributes)
	}

	failed := findPrefix(spans, "switchyard-extproc", "chat gpt-4o-mini")
	served := find(spans, "switchyard-extproc", "chat claude-3-5-haiku-20241022")
	if failed == nil {
		t.Fatalf("no span of the failed attempt: %v", names(spans))
	}
	for _, a := range []*harness.Span{failed, served} {
		if a.ParentID != req.SpanID || a.TraceID != clientTraceID {
			t.Errorf("attempt span %s is not under ext_proc's request span", a.Name)
		}
		if a.Attributes["gen_ai.operation.name"] != "chat" || a.Attributes["gen_ai.request.model"] == nil || a.Attributes["gen_ai.provider.name"] == nil {
			t.Errorf("attempt span %s lacks the GenAI attributes: %v", a.Name, a.Attributes)
		}
	}
	if failed.StatusCode != 2 || failed.Attributes["switchyard.blame"] != "provider" || failed.Attributes["error.type"] != "503" ||
		failed.Attributes["gen_ai.provider.name"] != "openai" {
		t.Errorf("failed attempt: status %d, attributes %v; want an error blamed on openai", failed.StatusCode, failed.Attributes)
	}
	if served.StatusCode == 2 || served.Attributes["gen_ai.provider.name"] != "anthropic" || served.Attributes["switchyard.attempt"] != int64(2) {
		t.Errorf("served attempt: status %d, attributes %v", served.StatusCode, served.Attributes)
	}
	for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.model", "gen_ai.response.finish_reasons", "gen_ai.response.time_to_first_chunk"} {
		if _, ok := served.Attributes[k]; !ok {
			t.Errorf("served attempt lacks %s: %v", k, served.Attributes)
		}
	}
	if !hasEvent(served, "switchyard.first_token") {
		t.Errorf("served attempt has no first-token event: %v", served.Events)
	}
	for _, step := range []string{"switchyard.auth", "switchyard.router", "switchyard.quota"} {
		if sp := find(spans, "switchyard-extproc", step); sp == nil || sp.ParentID != req.SpanID {
			t.Errorf("no %s span under the request's", step)
		}
	}
	// Envoy's span of each attempt is there too, the failed one an error.
	if sp := find(spans, "switchyard-envoy", "router provider_openai egress"); sp == nil || sp.StatusCode != 2 {
		t.Errorf("Envoy's span of the failed attempt: %+v", sp)
	}
	// The provider that answered got the trace context of Envoy's span of
	// its attempt, so a self-hosted model's spans would join the trace.
	egress := find(spans, "switchyard-envoy", "router provider_anthropic egress")
	sent, err := os.ReadFile(filepath.Join(o.SimRecordDir, "anthropic", "000.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Headers map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(sent, &rec); err != nil {
		t.Fatal(err)
	}
	if egress == nil || rec.Headers["Traceparent"] != "00-"+clientTraceID+"-"+egress.SpanID+"-01" {
		t.Errorf("the provider got traceparent %q; want Envoy's span of the attempt in the client's trace (%+v)", rec.Headers["Traceparent"], egress)
	}
	raw, err := col.Raw()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "Quillon") {
		t.Error("the prompt reached the collector with content recording off")
	}
	if containsSecret(string(raw), demoKey) {
		t.Error("the virtual key reached the collector")
	}
}

// TestTracingWithTheCollectorDown: with nothing listening where the
// collector should be, every request is served as before, and the spans
// that could not be exported are counted as dropped.
func TestTracingWithTheCollectorDown(t *testing.T) {
	s := startStack(t, withTracing(t, "127.0.0.1:1"))
	for i := range 20 {
		resp, stream := tracedChat(t, s, "")
		if resp.StatusCode != http.StatusOK || !strings.Contains(stream, "data: [DONE]") {
			t.Fatalf("request %d: status %d, stream %.200s", i, resp.StatusCode, stream)
		}
		if len(resp.Header.Get("X-Switchyard-Trace-Id")) != 32 {
			t.Fatalf("request %d has no trace ID", i)
		}
	}
	metrics := s.Replicas[0].ExtProcMetrics + "/metrics"
	deadline := time.Now().Add(30 * time.Second)
	for {
		dropped, err := harness.MetricSum(metrics, "switchyard_tracing_spans_dropped_total")
		if err != nil {
			t.Fatal(err)
		}
		if dropped > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no span counted as dropped with the collector down")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n, _ := harness.MetricSum(metrics, "switchyard_tracing_spans_exported_total"); n != 0 {
		t.Errorf("%v spans counted as exported to no collector", n)
	}
}

func find(spans []harness.Span, service, name string) *harness.Span {
	for i := range spans {
		if spans[i].Service == service && spans[i].Name == name {
			return &spans[i]
		}
	}
	return nil
}

func findPrefix(spans []harness.Span, service, prefix string) *harness.Span {
	for i := range spans {
		if spans[i].Service == service && strings.HasPrefix(spans[i].Name, prefix) {
			return &spans[i]
		}
	}
	return nil
}

func hasEvent(s *harness.Span, name string) bool {
	for _, e := range s.Events {
		if e.Name == name {
			return true
		}
	}
	return false
}

func names(spans []harness.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Service + ":" + s.Name
	}
	return out
}
