package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// postMessages sends a Messages body with the demo key and the given
// extra headers, and reads the answer.
func postMessages(t *testing.T, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, shared.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", demoKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestClientHeadersAreTheClients: Claude Code sends X-App: cli on every
// request for its own purposes; with a key bound to app demo it is served,
// and its ledger row is the key's app. The gateway's own app header still
// refuses another app, and that refusal is the key's tenant's row.
func TestClientHeadersAreTheClients(t *testing.T) {
	t.Parallel()
	const body = `{"model":"claude-3-5-haiku","max_tokens":64,"messages":[{"role":"user","content":"hi from a cli"}]}`
	resp, b := postMessages(t, body, map[string]string{"x-app": "cli", "anthropic-beta": "claude-code-20250219"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with X-App: cli: %d %s", resp.StatusCode, b)
	}
	served := awaitRecord(t, shared, resp.Header.Get("x-request-id"))
	if served.Tenant != "demo" || served.App != "demo" || served.KeyName != "demo-key" {
		t.Errorf("served row: tenant %q app %q key %q; want demo/demo/demo-key", served.Tenant, served.App, served.KeyName)
	}

	resp, b = postMessages(t, body, map[string]string{"x-switchyard-app": "cli"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "may not act as app") {
		t.Fatalf("with X-Switchyard-App: cli: %d %s; want 403 app_not_allowed", resp.StatusCode, b)
	}
	refused := awaitRecord(t, shared, resp.Header.Get("x-request-id"))
	if refused.Tenant != "demo" || refused.KeyName != "demo-key" || refused.Status != http.StatusForbidden {
		t.Errorf("refused row: tenant %q key %q status %d; want demo/demo-key/403", refused.Tenant, refused.KeyName, refused.Status)
	}
}
