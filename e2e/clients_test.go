package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/stack"
)

// postMessages sends a Messages body to the shared stack with the demo
// key and the given extra headers, and reads the answer.
func postMessages(t *testing.T, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	return postAnthropic(t, shared, "/v1/messages", demoKey, body, header)
}

// postAnthropic sends a body to path as Anthropic's clients do (the key as
// X-Api-Key, an anthropic-version), with extra headers, and reads the
// answer.
func postAnthropic(t *testing.T, s *stack.Stack, path, key, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
	req.Header.Set("x-api-key", key)
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

// TestCountTokensIsMetered: a token count reaches the provider with the
// shared provider key, so it is held to the caller's rate limits (the
// team tenant's bucket is 5 at 2 a second) and each one is a ledger row
// of its own route, at zero cost (issue 30, finding 2).
func TestCountTokensIsMetered(t *testing.T) {
	t.Parallel()
	s := startStack(t, defaultOptions())
	const body = `{"model":"claude-3-5-haiku","messages":[{"role":"user","content":"how many tokens?"}]}`
	codes := map[int]int{}
	var ids []string
	for range 20 {
		resp, _ := postAnthropic(t, s, "/v1/messages/count_tokens", teamKey, body, nil)
		codes[resp.StatusCode]++
		ids = append(ids, resp.Header.Get("x-request-id"))
	}
	if codes[http.StatusOK] == 0 || codes[http.StatusTooManyRequests] == 0 {
		t.Fatalf("statuses %v; want some counts served and the rest refused by the tenant's bucket", codes)
	}
	rows := ledgerRecords(t, s)
	for _, id := range ids {
		r, ok := rows[id]
		if !ok {
			t.Errorf("no ledger row for count %s", id)
			continue
		}
		if r.Route != "count_tokens" || r.Tenant != "team" || r.CostMicros != 0 {
			t.Errorf("row %s: route %q tenant %q cost %d; want count_tokens, team, 0", id, r.Route, r.Tenant, r.CostMicros)
		}
	}
	st, err := s.Sim.Stats("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.ByPath["/v1/messages/count_tokens"]; got != codes[http.StatusOK] {
		t.Errorf("the provider counted %d times, the tenant was served %d", got, codes[http.StatusOK])
	}
}
