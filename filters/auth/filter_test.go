package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

func sha(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}

var testPolicy = fmt.Sprintf(`
providers:
  - {name: p, kind: openai, base_url: "http://127.0.0.1:1"}
models:
  - {name: m1, provider: p, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 2}}
  - {name: m2, provider: p, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 2}}
tenants:
  - name: acme
    apps: [{name: web}, {name: batch}]
    keys:
      - {name: any-app, sha256: %s}
      - {name: web-only, app: web, sha256: %s}
  - name: solo
    keys: [{name: s, sha256: %s}]
`, sha("sk-any"), sha("sk-web"), sha("sk-solo"))

// down is a key ring that cannot be reached.
type down struct{ store.KeyRing }

func (down) Key(context.Context, string) (store.KeyRecord, error) {
	return store.KeyRecord{}, fmt.Errorf("store key: %w: connection refused", store.ErrUnavailable)
}

func TestRequestHeaders(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ring := store.NewMemory(store.Options{})
	created := time.Date(2026, 3, 15, 13, 0, 0, 0, time.UTC)
	for _, rec := range []store.KeyRecord{
		{Hash: store.HashKey("sk-runtime"), Name: "rt", Tenant: "acme", App: "batch", Models: []string{"m2"}, Created: created,
			Limits: store.KeyLimits{RequestsPerMinute: 7, DailyBudget: 1_000, MaxCostPerRequest: 50}},
		{Hash: store.HashKey("sk-revoked"), Name: "gone", Tenant: "acme", Created: created},
		{Hash: store.HashKey("sk-orphan"), Name: "orphan", Tenant: "left-the-policy", Created: created},
	} {
		if err := ring.PutKey(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := ring.RevokeKey(ctx, store.HashKey("sk-revoked")); err != nil {
		t.Fatal(err)
	}
	type caller struct{ Tenant, Key, App string }
	tests := []struct {
		name       string
		ring       store.KeyRing
		token, app string
		// apiKey sends the token as X-Api-Key, as Anthropic's clients do.
		apiKey     bool
		want       caller
		wantStatus int
		wantCode   string
	}{
		{name: "no key", ring: ring, wantStatus: 401, wantCode: "missing_api_key"},
		{name: "policy key", ring: ring, token: "sk-any", want: caller{"acme", "any-app", ""}},
		{name: "policy key as X-Api-Key", ring: ring, token: "sk-any", apiKey: true, want: caller{"acme", "any-app", ""}},
		{name: "unknown key as X-Api-Key", ring: ring, token: "sk-nobody", apiKey: true, wantStatus: 401, wantCode: "invalid_api_key"},
		{name: "policy key bound to an app", ring: ring, token: "sk-web", want: caller{"acme", "web-only", "web"}},
		{name: "unknown key", ring: ring, token: "sk-nobody", wantStatus: 401, wantCode: "invalid_api_key"},
		{name: "unknown key without a store", token: "sk-runtime", wantStatus: 401, wantCode: "invalid_api_key"},
		{name: "runtime key", ring: ring, token: "sk-runtime", want: caller{"acme", "rt", "batch"}},
		{name: "revoked runtime key", ring: ring, token: "sk-revoked", wantStatus: 401, wantCode: "invalid_api_key"},
		{name: "runtime key of a tenant no longer in the policy", ring: ring, token: "sk-orphan", wantStatus: 401, wantCode: "invalid_api_key"},
		{name: "store unreachable", ring: down{}, token: "sk-runtime", wantStatus: 503, wantCode: "key_store_unavailable"},
		{name: "store unreachable does not hold up policy keys", ring: down{}, token: "sk-any", want: caller{"acme", "any-app", ""}},
		{name: "X-App names an app of the tenant", ring: ring, token: "sk-any", app: "batch", want: caller{"acme", "any-app", "batch"}},
		{name: "X-App names an unknown app", ring: ring, token: "sk-any", app: "other", wantStatus: 403, wantCode: "unknown_app"},
		{name: "X-App on a tenant without apps", ring: ring, token: "sk-solo", app: "web", wantStatus: 403, wantCode: "unknown_app"},
		{name: "X-App may not move a bound key", ring: ring, token: "sk-web", app: "batch", wantStatus: 403, wantCode: "app_not_allowed"},
		{name: "X-App may repeat a bound key's app", ring: ring, token: "sk-web", app: "web", want: caller{"acme", "web-only", "web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &Filter{keys: tc.ring}
			x := &filters.Exchange{ID: "r1", Policy: p}
			switch {
			case tc.apiKey:
				x.Header = append(x.Header, filters.Header{Key: "x-api-key", Value: tc.token})
			case tc.token != "":
				x.Header = append(x.Header, filters.Header{Key: "authorization", Value: "Bearer " + tc.token})
			}
			if tc.app != "" {
				x.Header = append(x.Header, filters.Header{Key: "x-app", Value: tc.app})
			}
			err := f.RequestHeaders(ctx, x)
			_, removed := x.TakeRequestMutations()
			if diff := cmp.Diff([]string{"authorization", "x-api-key", "x-app"}, removed); diff != "" {
				t.Errorf("removed request headers (-want +got):\n%s", diff)
			}
			if tc.wantStatus != 0 {
				e := filters.AsError(err, x.ID)
				if e.Status != tc.wantStatus || e.Code != tc.wantCode {
					t.Fatalf("got %d %s (%v), want %d %s", e.Status, e.Code, err, tc.wantStatus, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := caller{x.Caller.Tenant.Name, x.Caller.KeyName, x.Caller.App}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestKeyOf: a runtime key carries its record's limits and allowlist.
func TestKeyOf(t *testing.T) {
	tenant := &policy.Tenant{Name: "acme"}
	rec := store.KeyRecord{Name: "rt", Tenant: "acme", App: "web", Models: []string{"m2"}, Limits: store.KeyLimits{
		ReplenishRate: 2, BurstCapacity: 4, RequestsPerMinute: 7, TokensPerMinute: 900,
		DailyBudget: 1_000, MonthlyBudget: 9_000, MaxCostPerRequest: 50,
	}}
	k := KeyOf(rec, tenant, [32]byte{1})
	want := &policy.Key{
		Name: "rt", App: "web", Tenant: tenant, Hash: [32]byte{1}, Models: map[string]bool{"m2": true},
		RateLimit:               policy.RateLimit{ReplenishRate: 2, BurstCapacity: 4, RequestsPerMinute: 7, TokensPerMinute: 900, FailOpen: true},
		Budget:                  policy.Budget{DailyMicros: 1_000, MonthlyMicros: 9_000, FailOpen: true},
		MaxCostPerRequestMicros: 50,
	}
	if diff := cmp.Diff(want, k); diff != "" {
		t.Errorf("key (-want +got):\n%s", diff)
	}
	if k.Allows("m1") || !k.Allows("m2") {
		t.Errorf("Allows: m1 %v, m2 %v; want false, true", k.Allows("m1"), k.Allows("m2"))
	}
}
