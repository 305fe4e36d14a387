package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/stack"
)

// connectionProviders is configs/local/providers.yaml with openai's
// cluster set apart: HTTP/2 by prior knowledge to its plain-HTTP
// simulator, at most 4 connections and 64 requests, idle connections
// kept 300 s, TCP keepalive after 60 s; anthropic is held to HTTP/1.1.
func connectionProviders(t *testing.T) string {
	t.Helper()
	root, _ := stack.ModuleRoot()
	b, err := os.ReadFile(filepath.Join(root, "configs", "local", "providers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, e := range []struct{ old, new string }{
		{"    base_url: http://127.0.0.1:9101\n", "    base_url: http://127.0.0.1:9101\n    connect_timeout: 2s\n" +
			"    connections: {protocol: http2, max_connections: 4, max_requests: 64, max_pending_requests: 8, idle_timeout: 300s, keepalive: 60s}\n"},
		{"    base_url: http://127.0.0.1:9102\n", "    base_url: http://127.0.0.1:9102\n    connections: {protocol: http1}\n"},
	} {
		if !strings.Contains(s, e.old) {
			t.Fatalf("configs/local/providers.yaml no longer has %q", e.old)
		}
		s = strings.Replace(s, e.old, e.new, 1)
	}
	return s
}

// TestProviderConnections: each provider's cluster gets its own
// connection settings from providers.yaml. Envoy reaches openai's
// plain-HTTP server over HTTP/2 (h2c) and anthropic's over HTTP/1.1, and
// holds openai's cluster to its own bounds while anthropic keeps the
// edge's.
func TestProviderConnections(t *testing.T) {
	s := startStack(t, stack.Options{Overlay: map[string]string{"providers.yaml": connectionProviders(t)}})
	c := &http.Client{}
	for _, model := range []string{"gpt-4o-mini", "claude-3-5-haiku"} {
		if a := chatAs(t, c, s, demoKey, model, 5); a.status != http.StatusOK {
			t.Fatalf("%s: %d %s", model, a.status, a.body)
		}
	}
	for provider, want := range map[string]string{"openai": "HTTP/2.0", "anthropic": "HTTP/1.1"} {
		st, err := s.Sim.Stats(provider)
		if err != nil || len(st.Recent) == 0 {
			t.Fatalf("%s's requests: %v", provider, err)
		}
		if got := st.Recent[len(st.Recent)-1].Proto; got != want {
			t.Errorf("%s was reached over %s, want %s", provider, got, want)
		}
	}

	resp, err := http.Get(s.Replicas[0].EnvoyAdmin + "/clusters")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	clusters := string(b)
	for _, want := range []string{
		"provider_openai::default_priority::max_connections::4\n",
		"provider_openai::default_priority::max_pending_requests::8\n",
		"provider_openai::default_priority::max_requests::64\n",
		// configs/local's gateway.edge bounds, which anthropic keeps.
		"provider_anthropic::default_priority::max_requests::10000\n",
	} {
		if !strings.Contains(clusters, want) {
			t.Errorf("Envoy's /clusters lacks %q", strings.TrimSpace(want))
		}
	}
}

// TestBatchEndpointsRefused: the providers' asynchronous batch APIs are
// not served (README, "Batching"), and saying so is an error naming the
// URL, not a pass-through whose spend no budget would see.
func TestBatchEndpointsRefused(t *testing.T) {
	for _, path := range []string{"/v1/batches", "/v1/messages/batches"} {
		resp, b := withKey(t, shared, http.MethodPost, path, demoKey, `{"requests":[]}`)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"unknown_url"`) {
			t.Errorf("POST %s: %d %s, want 404 unknown_url", path, resp.StatusCode, b)
		}
	}
}
