package resources_test

import (
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/switchyard/switchyard/xds/resources"
)

// TestTracing: gateway.tracing gives the listener Envoy's OpenTelemetry
// tracer, sampling the policy's ratio, exporting to the collector's
// cluster over the policy's protocol, and the access log the trace ID;
// without it none of these is there.
func TestTracing(t *testing.T) {
	t.Parallel()
	const providers = `
providers: [{name: sim, kind: openai, base_url: "http://127.0.0.1:9"}]
`
	tests := []struct {
		name        string
		gateway     string
		wantTracing bool
		wantGRPC    bool
		wantURI     string
	}{
		{name: "off", gateway: "gateway: {}"},
		{name: "grpc", gateway: `gateway: {tracing: {collector: "127.0.0.1:4317", sample_ratio: 0.25}}`, wantTracing: true, wantGRPC: true},
		{name: "http over tls", gateway: `gateway: {tracing: {collector: "otel.example.com:4318", protocol: http, tls: true, sample_ratio: 0.25}}`,
			wantTracing: true, wantURI: "https://otel.example.com:4318/v1/traces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := load(t, tt.gateway+providers)
			snap, err := resources.Snapshot(p, resources.Options{AccessLog: true})
			if err != nil {
				t.Fatal(err)
			}
			var cluster *clusterv3.Cluster
			for _, r := range snap.GetResources(resource.ClusterType) {
				if c := r.(*clusterv3.Cluster); c.GetName() == resources.TracingCluster {
					cluster = c
				}
			}
			hcm := &hcmv3.HttpConnectionManager{}
			if err := resources.Listener(p, resources.Options{AccessLog: true}).GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
				t.Fatal(err)
			}
			js, _ := protojson.Marshal(hcm)
			if got := strings.Contains(string(js), "%TRACE_ID%"); got != tt.wantTracing {
				t.Errorf("access log names the trace: %v, want %v", got, tt.wantTracing)
			}
			layer, _ := protojson.Marshal(resources.Runtime(p))
			if got := strings.Contains(string(layer), "tracing.opentelemetry.flush_interval_ms"); got != tt.wantTracing {
				t.Errorf("runtime sets the tracer's flush interval: %v, want %v", got, tt.wantTracing)
			}
			if !tt.wantTracing {
				if cluster != nil || hcm.GetTracing() != nil {
					t.Errorf("tracing off, got a collector cluster %v and tracing %v", cluster != nil, hcm.GetTracing())
				}
				return
			}
			tr := hcm.GetTracing()
			if cluster == nil || tr == nil {
				t.Fatalf("tracing on, got a collector cluster %v and tracing %v", cluster != nil, tr)
			}
			if tr.GetRandomSampling().GetValue() != 25 || !tr.GetSpawnUpstreamSpan().GetValue() {
				t.Errorf("sampling %v%%, upstream spans %v; want 25%% and per-attempt spans", tr.GetRandomSampling().GetValue(), tr.GetSpawnUpstreamSpan().GetValue())
			}
			otel := &tracev3.OpenTelemetryConfig{}
			if err := tr.GetProvider().GetTypedConfig().UnmarshalTo(otel); err != nil {
				t.Fatal(err)
			}
			if tt.wantGRPC && otel.GetGrpcService().GetEnvoyGrpc().GetClusterName() != resources.TracingCluster {
				t.Errorf("OTLP/gRPC service = %v, want the collector's cluster", otel.GetGrpcService())
			}
			if u := otel.GetHttpService().GetHttpUri(); tt.wantURI != "" && (u.GetUri() != tt.wantURI || u.GetCluster() != resources.TracingCluster) {
				t.Errorf("OTLP/HTTP service = %v, want %s on the collector's cluster", u, tt.wantURI)
			}
			if got := cluster.GetTransportSocket() != nil; got != (tt.wantURI != "") {
				t.Errorf("collector cluster TLS = %v", got)
			}
		})
	}
}
