package policy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestConnectionsCompile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, gateway, provider string
		want                    policy.Connections
		wantConnect             time.Duration
	}{
		{name: "defaults are the edge's",
			want: policy.Connections{MaxConnections: 10_000, MaxRequests: 10_000, MaxPendingRequests: 1_000,
				IdleTimeout: time.Minute, Protocol: policy.ProtocolAuto},
			wantConnect: 5 * time.Second},
		{name: "edge bounds carry over", gateway: "gateway: {edge: {upstream_max_connections: 50, upstream_max_requests: 500}}",
			want: policy.Connections{MaxConnections: 50, MaxRequests: 500, MaxPendingRequests: 1_000,
				IdleTimeout: time.Minute, Protocol: policy.ProtocolAuto},
			wantConnect: 5 * time.Second},
		{name: "the seed's OpenAI line", provider: "connect_timeout: 30s, connections: {max_connections: 10, idle_timeout: 300s}",
			want: policy.Connections{MaxConnections: 10, MaxRequests: 10_000, MaxPendingRequests: 1_000,
				IdleTimeout: 300 * time.Second, Protocol: policy.ProtocolAuto},
			wantConnect: 30 * time.Second},
		{name: "self-hosted over HTTP/2",
			provider: "connections: {protocol: http2, max_connections: 2, max_requests: 256, max_pending_requests: 16, keepalive: 60s}",
			want: policy.Connections{MaxConnections: 2, MaxRequests: 256, MaxPendingRequests: 16,
				IdleTimeout: time.Minute, Keepalive: time.Minute, Protocol: policy.ProtocolHTTP2},
			wantConnect: 5 * time.Second},
		{name: "held to HTTP/1.1", provider: "connections: {protocol: http1}",
			want: policy.Connections{MaxConnections: 10_000, MaxRequests: 10_000, MaxPendingRequests: 1_000,
				IdleTimeout: time.Minute, Protocol: policy.ProtocolHTTP1},
			wantConnect: 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			y := tt.gateway + "\nproviders:\n  - {name: vllm, kind: openai_compatible, base_url: \"http://127.0.0.1:8000\", " + tt.provider + "}\n"
			p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(y)}})
			if err != nil {
				t.Fatal(err)
			}
			pr := p.Provider("vllm")
			if diff := cmp.Diff(tt.want, pr.Connections); diff != "" {
				t.Errorf("connections (-want +got):\n%s", diff)
			}
			if pr.ConnectTimeout != tt.wantConnect {
				t.Errorf("connect timeout %s, want %s", pr.ConnectTimeout, tt.wantConnect)
			}
		})
	}
}
