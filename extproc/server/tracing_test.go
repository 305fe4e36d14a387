package server_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/metadata"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/extproc/server"
	"github.com/switchyard/switchyard/extproc/tracing"
	"github.com/switchyard/switchyard/filters"
)

// TestTracedRequests: with tracing on, an answer, a refusal included,
// names the trace Envoy's span started (from the stream's metadata), and
// the trace context reaches the provider; with tracing off neither.
func TestTracedRequests(t *testing.T) {
	const envoyTrace = "0af7651916cd43dd8448eb211c80319c"
	tests := []struct {
		name      string
		tracing   bool
		auth      string
		wantTrace string
	}{
		{name: "traced", tracing: true, auth: "Bearer sk-local-demo", wantTrace: envoyTrace},
		{name: "traced refusal", tracing: true, auth: "Bearer sk-wrong", wantTrace: envoyTrace},
		{name: "tracing off", auth: "Bearer sk-local-demo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := testPolicy
			if tt.tracing {
				src = "gateway: {tracing: {collector: \"127.0.0.1:1\"}}\n" + src
			}
			t.Setenv("SY_TEST_OA_KEY", "sk-provider-secret")
			p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(src)}})
			if err != nil {
				t.Fatal(err)
			}
			chains, err := filters.Build(filters.Deps{Policy: p, Secrets: envSecrets{}})
			if err != nil {
				t.Fatal(err)
			}
			pipes := tracing.NewPipelines(prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
			tr, err := pipes.Tracer(p.Gateway.Tracing)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = pipes.Close(ctx)
			})
			h := serve(t, &server.Runtime{Policy: p, Chains: chains, Tracing: tr})
			// Envoy's tracer names its span of the call in the metadata.
			ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", "00-"+envoyTrace+"-b7ad6b7169203331-01")
			s, err := extprocv3.NewExternalProcessorClient(h.conn).Process(ctx)
			if err != nil {
				t.Fatal(err)
			}
			req := reqHeaders("rid-t", tt.auth)
			req.GetRequestHeaders().Headers.Headers = append(req.GetRequestHeaders().GetHeaders().GetHeaders(),
				headers("traceparent", "00-"+envoyTrace+"-00f067aa0ba902b7-01").GetHeaders()...)
			resp := send(t, s, req)
			if ir := resp.GetImmediateResponse(); ir != nil {
				if got := setOf(ir.GetHeaders())[filters.HeaderTraceID]; got != tt.wantTrace {
					t.Errorf("refusal names trace %q, want %q", got, tt.wantTrace)
				}
				return
			}
			resp = send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{
				Body: []byte(`{"model":"mini","messages":[{"role":"user","content":"hi"}]}`), EndOfStream: true,
			}}})
			removed := contains(resp.GetRequestBody().GetResponse().GetHeaderMutation().GetRemoveHeaders(), "traceparent")
			if removed == tt.tracing {
				t.Errorf("traceparent removed: %v, with tracing %v", removed, tt.tracing)
			}
			resp = send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
				Headers: headers(":status", "200", "content-type", "application/json"),
			}}})
			if got := setOf(resp.GetResponseHeaders().GetResponse().GetHeaderMutation())[filters.HeaderTraceID]; got != tt.wantTrace {
				t.Errorf("answer names trace %q, want %q", got, tt.wantTrace)
			}
		})
	}
}
