package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/stack"
)

// TestUnreachableProviders: providers the gateway cannot reach — a name
// that does not resolve, a port that refuses, a TLS handshake that fails
// — get a 503 that names each provider tried and the layer that failed,
// not an overload; a provider that cannot be reached is tried after the
// others from then on; the admin API and /readyz say which providers are
// unreachable, and why.
func TestUnreachableProviders(t *testing.T) {
	t.Parallel()
	// A server that answers plain text to whatever it is sent: a provider
	// that expects TLS fails its handshake. It writes at once and closes
	// only after the client does, so that Envoy always reads the text
	// (an HTTP server that closed first could reset the connection before
	// Envoy read a byte, which is a connect failure, not a TLS one).
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := plain.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 5\r\n\r\nplain")
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(func() { _ = plain.Close() })
	tlsPort := plain.Addr().(*net.TCPAddr).Port
	overlay := fmt.Sprintf(`
providers:
  - {name: offline-dns, kind: openai, base_url: "https://switchyard-e2e.invalid", api_key: {env: OFFLINE_KEY}}
  - {name: offline-dns2, kind: openai, base_url: "https://other-switchyard-e2e.invalid", api_key: {env: OFFLINE_KEY}}
  - {name: offline-port, kind: anthropic, base_url: "http://127.0.0.1:1", api_key: {env: OFFLINE_KEY}}
  - {name: offline-tls, kind: gemini, base_url: "https://127.0.0.1:%d", api_key: {env: OFFLINE_KEY}}
models:
  - {name: far-port, provider: offline-port, context_window: 10000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}, fallback: [far-tls, far-dns]}
  - {name: far-tls, provider: offline-tls, context_window: 10000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}
  - {name: far-dns, provider: offline-dns, context_window: 10000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}
  - {name: far-dns-alone, provider: offline-dns2, context_window: 10000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}
`, tlsPort)
	s := startStack(t, stack.Options{Overlay: map[string]string{"zz-offline.yaml": overlay}, Env: []string{"OFFLINE_KEY=offline-e2e-key"}})
	ask := func(model string) (int, http.Header, string) {
		resp, b := withKey(t, s, http.MethodPost, "/v1/chat/completions", demoKey, `{"model":"`+model+`","messages":[{"role":"user","content":"anyone there?"}]}`)
		return resp.StatusCode, resp.Header, string(b)
	}
	type envelope struct {
		Error struct {
			Message, Code string
		} `json:"error"`
	}

	t.Run("the 503 names every provider tried and why", func(t *testing.T) {
		status, _, body := ask("far-port")
		var e envelope
		_ = json.Unmarshal([]byte(body), &e)
		if status != http.StatusServiceUnavailable || e.Error.Code != "all_providers_failed" {
			t.Fatalf("%d %s; want 503 all_providers_failed", status, body)
		}
		for _, want := range []string{
			"no provider could be reached: ",
			"attempt 1 offline-port/far-port: connect: 127.0.0.1:1: connection refused",
			fmt.Sprintf("attempt 2 offline-tls/far-tls: TLS: handshake with 127.0.0.1:%d failed: ", tlsPort),
			"attempt 3 offline-dns/far-dns: DNS: switchyard-e2e.invalid resolved to no address",
		} {
			if !strings.Contains(e.Error.Message, want) {
				t.Errorf("message %q lacks %q", e.Error.Message, want)
			}
		}
	})

	t.Run("a name that does not resolve, then the next provider", func(t *testing.T) {
		// Envoy does not retry an attempt whose provider has no address:
		// the first request that meets it gets the 503, unless the
		// provider's health checks found it first.
		status, h, body := ask("far-dns-alone")
		if status == http.StatusServiceUnavailable {
			var e envelope
			_ = json.Unmarshal([]byte(body), &e)
			if e.Error.Code != "all_providers_failed" ||
				e.Error.Message != "no provider could be reached: attempt 1 offline-dns2/far-dns-alone: DNS: other-switchyard-e2e.invalid resolved to no address" {
				t.Fatalf("%d %s", status, body)
			}
			status, h, body = ask("far-dns-alone")
		}
		// Known to have no address, it goes after the route's fallbacks.
		if status != http.StatusOK || h.Get("x-switchyard-provider") == "offline-dns2" || !strings.Contains(h.Get("x-switchyard-route-reason"), "no address, tried last: far-dns-alone (DNS: ") {
			t.Errorf("%d by %s (%s): %s", status, h.Get("x-switchyard-provider"), h.Get("x-switchyard-route-reason"), body)
		}
	})

	t.Run("the admin API and /readyz say which providers are unreachable", func(t *testing.T) {
		code, b := admin(t, s, http.MethodGet, "/admin/providers", "")
		if code != http.StatusOK {
			t.Fatalf("%d %s", code, b)
		}
		var list struct {
			Data []struct {
				Provider    string `json:"provider"`
				Unreachable *struct {
					Reason string `json:"reason"`
				} `json:"unreachable"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, p := range list.Data {
			if p.Unreachable != nil {
				got[p.Provider] = p.Unreachable.Reason
			}
		}
		want := map[string]string{"offline-dns": "DNS: ", "offline-dns2": "DNS: ", "offline-port": "connect: ", "offline-tls": "TLS: "}
		for p, prefix := range want {
			if !strings.HasPrefix(got[p], prefix) {
				t.Errorf("%s unreachable %q, want a reason starting %q", p, got[p], prefix)
			}
		}
		if len(got) != len(want) {
			t.Errorf("unreachable %v, want only %v", got, want)
		}
		resp, err := http.Get(s.Replicas[0].ExtProcMetrics + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "ready\n") {
			t.Errorf("/readyz %d %q, want ready: a provider out of reach leaves the replica in service", resp.StatusCode, body)
		}
		for p := range want {
			if !strings.Contains(string(body), "provider "+p+" unreachable since ") {
				t.Errorf("/readyz %q does not name %s", body, p)
			}
		}
	})
}
