package policy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestTracingCompiles(t *testing.T) {
	t.Parallel()
	const rest = `
providers: [{name: oa, kind: openai, base_url: "http://127.0.0.1:9101", api_key: {env: K}}]
models: [{name: m, provider: oa, context_window: 1000, max_output_tokens: 100, capabilities: [chat], price_usd_per_mtok: {input: 1, output: 1}}]
routes: [{name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, translate, usage]}]
tenants: [{name: acme, keys: [{name: k, sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}]}]
`
	tests := []struct {
		name          string
		gateway       string
		want          *policy.Tracing
		route, tenant string
		wantCaptures  bool
	}{
		{name: "off", gateway: "gateway: {}"},
		{name: "defaults", gateway: `gateway: {tracing: {collector: "127.0.0.1:4317"}}`,
			want: &policy.Tracing{Collector: "127.0.0.1:4317", Host: "127.0.0.1", Port: 4317, Protocol: "grpc", SampleRatio: 1,
				KeepSlowerThan: 30 * time.Second, ContentMaxBytes: 4096},
			route: "chat", tenant: "acme"},
		{name: "http, sampled, content by tenant", gateway: `gateway:
  tracing:
    collector: "collector.example.com:4318"
    protocol: http
    tls: true
    sample_ratio: 0.01
    keep_slower_than: 5s
    content: {tenants: [acme], max_bytes: 1KiB}
    viewer: "https://jaeger.example.com/trace/{trace_id}"`,
			want: &policy.Tracing{Collector: "collector.example.com:4318", Host: "collector.example.com", Port: 4318, Protocol: "http", TLS: true,
				SampleRatio: 0.01, KeepSlowerThan: 5 * time.Second, ContentRoutes: map[string]bool{}, ContentTenants: map[string]bool{"acme": true}, ContentMaxBytes: 1024,
				Viewer: "https://jaeger.example.com/trace/{trace_id}"},
			route: "other", tenant: "acme", wantCaptures: true},
		{name: "content by route, not before auth names the tenant", gateway: `gateway: {tracing: {collector: "127.0.0.1:4317", content: {routes: [chat]}}}`,
			want: &policy.Tracing{Collector: "127.0.0.1:4317", Host: "127.0.0.1", Port: 4317, Protocol: "grpc", SampleRatio: 1,
				KeepSlowerThan: 30 * time.Second, ContentRoutes: map[string]bool{"chat": true}, ContentTenants: map[string]bool{}, ContentMaxBytes: 4096},
			route: "chat", wantCaptures: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(tt.gateway + "\n" + rest)}})
			if err != nil {
				t.Fatal(err)
			}
			got := p.Gateway.Tracing
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tracing (-want +got):\n%s", diff)
			}
			if c := got.Captures(tt.route, tt.tenant); c != tt.wantCaptures {
				t.Errorf("Captures(%q, %q) = %v, want %v", tt.route, tt.tenant, c, tt.wantCaptures)
			}
		})
	}
}

func TestViewerURL(t *testing.T) {
	tests := []struct {
		name string
		t    *policy.Tracing
		id   string
		want string
	}{
		{name: "tracing off", id: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{name: "no viewer", t: &policy.Tracing{}, id: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{name: "no trace", t: &policy.Tracing{Viewer: "http://127.0.0.1:16686/trace/{trace_id}"}},
		{name: "a trace", t: &policy.Tracing{Viewer: "http://127.0.0.1:16686/trace/{trace_id}"}, id: "4bf92f3577b34da6a3ce929d0e0e4736",
			want: "http://127.0.0.1:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736"},
		{name: "an id is escaped", t: &policy.Tracing{Viewer: "http://v/trace/{trace_id}"}, id: "a/b?c", want: "http://v/trace/a%2Fb%3Fc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.t.ViewerURL(tt.id); got != tt.want {
				t.Errorf("ViewerURL(%q) = %q, want %q", tt.id, got, tt.want)
			}
		})
	}
}
