package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/auth"
	"github.com/switchyard/switchyard/state/store"
)

func sha(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}

var keysPolicy = fmt.Sprintf(`
gateway: {admin_key_sha256: %s}
providers:
  - {name: p, kind: openai, base_url: "http://127.0.0.1:1"}
models:
  - {name: m1, provider: p, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 2}}
  - {name: m2, provider: p, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 2}}
routes:
  - {name: admin, path: /admin, api: admin, filters: [admin]}
tenants:
  - name: acme
    apps: [{name: web}, {name: batch}]
    keys: [{name: yaml-key, app: web, sha256: %s, rate_limit: {requests_per_minute: 9}}]
  - name: beta
    models: [m1]
`, sha("sk-admin"), sha("sk-yaml"))

// keysRig is the admin filter over a memory store, with the audit trail
// and the log in one buffer.
type keysRig struct {
	t     *testing.T
	p     *policy.Policy
	f     filters.Filter
	st    store.Store
	trail bytes.Buffer
}

func newKeysRig(t *testing.T, st store.Store) *keysRig {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(keysPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &keysRig{t: t, p: p, st: st}
	f, err := New(policy.FilterRef{Name: "admin"}, filters.Deps{
		Policy: p, Route: p.Routes[0], Store: st,
		Logger: slog.New(slog.NewJSONHandler(&r.trail, nil)), Audit: audit.New(&r.trail, "test"),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.f = f
	return r
}

// call makes one admin call and returns the status and the decoded body.
func (r *keysRig) call(method, target, body string) (int, map[string]any) {
	r.t.Helper()
	path, query, _ := strings.Cut(target, "?")
	x := &filters.Exchange{
		ID: "req", Policy: r.p, Route: r.p.Routes[0], Method: method, Path: path, Query: query, Body: []byte(body),
		Header: filters.Headers{{Key: "authorization", Value: "Bearer sk-admin"}},
	}
	f := r.f.(*Filter)
	err := f.RequestHeaders(context.Background(), x)
	if err == nil {
		err = f.RequestBody(context.Background(), x)
	}
	var status int
	var raw []byte
	if err != nil {
		e := filters.AsError(err, x.ID)
		status, raw = e.Status, e.Body()
	} else {
		reply := x.TakeReply()
		status, raw = reply.Status, reply.Body
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		r.t.Fatalf("%s %s: body %q: %v", method, target, raw, err)
	}
	return status, out
}

// caller authenticates a key the way every request does.
func (r *keysRig) caller(key string) (filters.Caller, error) {
	a, err := auth.New(policy.FilterRef{Name: "auth"}, filters.Deps{Policy: r.p, Store: r.st})
	if err != nil {
		r.t.Fatal(err)
	}
	x := &filters.Exchange{Policy: r.p, Header: filters.Headers{{Key: "authorization", Value: "Bearer " + key}}}
	err = a.(filters.RequestHeadersHook).RequestHeaders(context.Background(), x)
	return x.Caller, err
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// TestKeyLifecycle issues, lists, rotates and revokes a key, and checks
// what auth makes of it at each step and that no secret is ever logged.
func TestKeyLifecycle(t *testing.T) {
	r := newKeysRig(t, store.NewMemory(store.Options{}))
	status, issued := r.call("POST", "/admin/keys",
		`{"tenant":"acme","name":"ci","app":"web","models":["m1"],"rate_limit":{"requests_per_minute":5},"budget_usd":{"daily":2},"max_cost_per_request_usd":0.5,"tags":{"team":"search"}}`)
	if status != 201 {
		t.Fatalf("issue: %d %v", status, issued)
	}
	first, _ := issued["key"].(string)
	if !strings.HasPrefix(first, "sk-sy-") || len(first) < 40 {
		t.Fatalf("issued secret %q, want sk-sy- and at least 256 bits", first)
	}
	if got, want := issued["hash_prefix"], store.HashKey(first)[:8]; got != want {
		t.Errorf("hash_prefix %v, want %s", got, want)
	}
	c, err := r.caller(first)
	if err != nil {
		t.Fatalf("the issued key is refused: %v", err)
	}
	if c.Tenant.Name != "acme" || c.KeyName != "ci" || c.App != "web" || c.Key.RateLimit.RequestsPerMinute != 5 ||
		c.Key.Budget.DailyMicros != 2_000_000 || c.Key.MaxCostPerRequestMicros != 500_000 || c.Key.Allows("m2") || c.Key.Tags["team"] != "search" {
		t.Errorf("caller %+v key %+v: not the key that was issued", c, c.Key)
	}

	for _, name := range []string{"ci", "yaml-key"} {
		if status, body := r.call("POST", "/admin/keys", `{"tenant":"acme","name":"`+name+`"}`); status != 409 || errCode(body) != "key_exists" {
			t.Errorf("issuing %s again: %d %v, want 409 key_exists", name, status, body)
		}
	}

	status, list := r.call("GET", "/admin/keys?tenant=acme", "")
	if status != 200 {
		t.Fatalf("list: %d %v", status, list)
	}
	var got []string
	for _, d := range list["data"].([]any) {
		k := d.(map[string]any)
		got = append(got, fmt.Sprintf("%s/%s/%v", k["source"], k["name"], k["revoked"]))
		if _, ok := k["key"]; ok {
			t.Errorf("the list shows a secret: %v", k)
		}
	}
	if diff := cmp.Diff([]string{"policy/yaml-key/false", "api/ci/false"}, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	status, rotated := r.call("POST", "/admin/keys/ci/rotate?tenant=acme", "")
	second, _ := rotated["key"].(string)
	if status != 200 || second == "" || second == first {
		t.Fatalf("rotate: %d %v", status, rotated)
	}
	if _, err := r.caller(first); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("the rotated-out key: %v, want refused as revoked", err)
	}
	if c, err := r.caller(second); err != nil || c.Key.RateLimit.RequestsPerMinute != 5 || c.App != "web" || c.Key.Tags["team"] != "search" {
		t.Errorf("the new key: %+v, %v; want the same key under a new secret", c, err)
	}

	if status, body := r.call("DELETE", "/admin/keys/ci", ""); status != 200 || body["revoked"] != true {
		t.Fatalf("revoke: %d %v", status, body)
	}
	if _, err := r.caller(second); err == nil {
		t.Error("a revoked key still authenticates")
	}
	if status, body := r.call("DELETE", "/admin/keys/ci", ""); status != 404 || errCode(body) != "unknown_key" {
		t.Errorf("revoking again: %d %v, want 404 unknown_key", status, body)
	}
	if status, body := r.call("POST", "/admin/keys/yaml-key/rotate", ""); status != 409 || errCode(body) != "policy_key" {
		t.Errorf("rotating a policy key: %d %v, want 409 policy_key", status, body)
	}
	if status, body := r.call("POST", "/admin/keys", `{"tenant":"acme","name":"ci"}`); status != 201 {
		t.Errorf("a revoked key's name is free again: %d %v", status, body)
	}

	trail := r.trail.String()
	for _, action := range []string{"key.issue", "key.list", "key.rotate", "key.revoke"} {
		if !strings.Contains(trail, action) {
			t.Errorf("the audit trail has no %s:\n%s", action, trail)
		}
	}
	for _, secret := range []string{first, second, store.HashKey(first), store.HashKey(second)} {
		if strings.Contains(trail, secret) {
			t.Errorf("the audit trail holds a secret or a full hash:\n%s", trail)
		}
	}
}

func TestIssueValidation(t *testing.T) {
	tests := []struct {
		name, body string
		wantStatus int
		wantCode   string
	}{
		{"unknown tenant", `{"tenant":"nobody","name":"k"}`, 404, "unknown_tenant"},
		{"bad name", `{"tenant":"acme","name":"a b"}`, 400, "invalid_key_request"},
		{"name with a colon", `{"tenant":"acme","name":"a:b"}`, 400, "invalid_key_request"},
		{"unknown app", `{"tenant":"acme","name":"k","app":"mobile"}`, 400, "invalid_key_request"},
		{"app of a tenant without apps", `{"tenant":"beta","name":"k","app":"web"}`, 400, "invalid_key_request"},
		{"unknown model", `{"tenant":"acme","name":"k","models":["gpt-9"]}`, 400, "invalid_key_request"},
		{"model outside the tenant's", `{"tenant":"beta","name":"k","models":["m2"]}`, 400, "invalid_key_request"},
		{"bucket without burst", `{"tenant":"acme","name":"k","rate_limit":{"replenish_rate":1}}`, 400, "invalid_key_request"},
		{"empty rate limit", `{"tenant":"acme","name":"k","rate_limit":{}}`, 400, "invalid_key_request"},
		{"empty budget", `{"tenant":"acme","name":"k","budget_usd":{}}`, 400, "invalid_key_request"},
		{"zero budget", `{"tenant":"acme","name":"k","budget_usd":{"daily":0}}`, 400, "invalid_key_request"},
		{"negative max cost", `{"tenant":"acme","name":"k","max_cost_per_request_usd":-1}`, 400, "invalid_key_request"},
		{"unknown field", `{"tenant":"acme","name":"k","secret":"sk-mine"}`, 400, "invalid_body"},
		{"a tag with a bad key", `{"tenant":"acme","name":"k","tags":{"cost center":"1"}}`, 400, "invalid_key_request"},
		{"a tag with a comma", `{"tenant":"acme","name":"k","tags":{"team":"a,b"}}`, 400, "invalid_key_request"},
		{"a tag without a value", `{"tenant":"acme","name":"k","tags":{"team":""}}`, 400, "invalid_key_request"},
		{"a valid key", `{"tenant":"beta","name":"k","models":["m1"],"rate_limit":{"replenish_rate":2,"burst_capacity":4}}`, 201, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newKeysRig(t, store.NewMemory(store.Options{}))
			status, body := r.call("POST", "/admin/keys", tc.body)
			if status != tc.wantStatus || errCode(body) != tc.wantCode {
				t.Errorf("got %d %q (%v), want %d %q", status, errCode(body), body, tc.wantStatus, tc.wantCode)
			}
		})
	}
}

// TestKeyNamesPerTenant: names are unique per tenant, so one name may live
// in two tenants, and then rotate and revoke need ?tenant=.
func TestKeyNamesPerTenant(t *testing.T) {
	r := newKeysRig(t, store.NewMemory(store.Options{}))
	for _, tenant := range []string{"acme", "beta"} {
		if status, body := r.call("POST", "/admin/keys", `{"tenant":"`+tenant+`","name":"shared"}`); status != 201 {
			t.Fatalf("issue in %s: %d %v", tenant, status, body)
		}
	}
	if status, body := r.call("DELETE", "/admin/keys/shared", ""); status != 409 || errCode(body) != "ambiguous_key_name" {
		t.Errorf("ambiguous revoke: %d %v, want 409 ambiguous_key_name", status, body)
	}
	if status, body := r.call("DELETE", "/admin/keys/shared?tenant=beta", ""); status != 200 || body["tenant"] != "beta" {
		t.Errorf("revoke in beta: %d %v", status, body)
	}
	if status, body := r.call("DELETE", "/admin/keys/shared", ""); status != 200 || body["tenant"] != "acme" {
		t.Errorf("the one left is unambiguous: %d %v", status, body)
	}
}

// downRing is a store whose key ring cannot be reached.
type downRing struct{ store.Store }

func (downRing) TenantKeys(context.Context, string) ([]store.KeyRecord, error) {
	return nil, fmt.Errorf("store tenant_keys: %w", store.ErrUnavailable)
}

func TestKeysStoreDown(t *testing.T) {
	r := newKeysRig(t, downRing{store.NewMemory(store.Options{})})
	for _, c := range [][2]string{{"POST", "/admin/keys"}, {"GET", "/admin/keys"}, {"DELETE", "/admin/keys/k"}} {
		status, body := r.call(c[0], c[1], `{"tenant":"acme","name":"k"}`)
		if status != 503 || errCode(body) != "store_unavailable" {
			t.Errorf("%s %s: %d %v, want 503 store_unavailable", c[0], c[1], status, body)
		}
	}
}
