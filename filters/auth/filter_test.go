package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
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
  - name: teams
    apps: [{name: chat}, {name: cli}]
    default_app: chat
    keys:
      - {name: unbound, sha256: %s}
      - {name: to-cli, default_app: cli, sha256: %s}
`, sha("sk-any"), sha("sk-web"), sha("sk-solo"), sha("sk-teams"), sha("sk-to-cli"))

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
		apiKey bool
		// header is another request header the client sends.
		header filters.Header
		// want is the caller, refused or not: a refusal after the key is
		// known is the key's tenant's.
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
		{name: "the app header names an app of the tenant", ring: ring, token: "sk-any", app: "batch", want: caller{"acme", "any-app", "batch"}},
		{name: "the app header names an unknown app", ring: ring, token: "sk-any", app: "other", want: caller{"acme", "any-app", ""}, wantStatus: 403, wantCode: "unknown_app"},
		{name: "the app header on a tenant without apps", ring: ring, token: "sk-solo", app: "web", want: caller{"solo", "s", ""}, wantStatus: 403, wantCode: "unknown_app"},
		{name: "the app header may not move a bound key", ring: ring, token: "sk-web", app: "batch", want: caller{"acme", "web-only", "web"}, wantStatus: 403, wantCode: "app_not_allowed"},
		{name: "the app header may repeat a bound key's app", ring: ring, token: "sk-web", app: "web", want: caller{"acme", "web-only", "web"}},
		// Claude Code sends X-App: cli on every request, for itself.
		{name: "X-App is the client's, not an app selector", ring: ring, token: "sk-web", header: filters.Header{Key: "x-app", Value: "cli"}, want: caller{"acme", "web-only", "web"}},
		{name: "the tenant's default app", ring: ring, token: "sk-teams", want: caller{"teams", "unbound", "chat"}},
		{name: "the key's default app", ring: ring, token: "sk-to-cli", want: caller{"teams", "to-cli", "cli"}},
		{name: "a default app may be overridden", ring: ring, token: "sk-to-cli", app: "chat", want: caller{"teams", "to-cli", "chat"}},
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
				x.Header = append(x.Header, filters.Header{Key: filters.HeaderApp, Value: tc.app})
			}
			if tc.header.Key != "" {
				x.Header = append(x.Header, tc.header)
			}
			// Every credential the client sent is removed; one it did not
			// send needs no removal.
			var wantRemoved []string
			for _, k := range []string{"authorization", "x-api-key", filters.HeaderApp} {
				if x.Header.Get(k) != "" {
					wantRemoved = append(wantRemoved, k)
				}
			}
			err := f.RequestHeaders(ctx, x)
			_, removed := x.TakeRequestMutations()
			if diff := cmp.Diff(wantRemoved, removed); diff != "" {
				t.Errorf("removed request headers (-want +got):\n%s", diff)
			}
			if tc.wantStatus != 0 {
				e := filters.AsError(err, x.ID)
				if e.Status != tc.wantStatus || e.Code != tc.wantCode {
					t.Fatalf("got %d %s (%v), want %d %s", e.Status, e.Code, err, tc.wantStatus, tc.wantCode)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			var got caller
			if x.Caller.Tenant != nil {
				got = caller{x.Caller.Tenant.Name, x.Caller.KeyName, x.Caller.App}
			}
			if got != tc.want {
				t.Errorf("caller: got %+v, want %+v", got, tc.want)
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

// counting is a key ring that counts its lookups.
type counting struct {
	store.KeyRing
	lookups int
}

func (c *counting) Key(ctx context.Context, hash string) (store.KeyRecord, error) {
	c.lookups++
	return c.KeyRing.Key(ctx, hash)
}

// TestUnknownKeysCostOneLookup: a client retrying with a key the store does
// not know, or knows revoked, costs one store lookup per 30 seconds, not
// one per request, and still gets its 401; a known key is looked up every
// time (its revocation must hold at once).
func TestUnknownKeysCostOneLookup(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mem := store.NewMemory(store.Options{})
	for _, h := range []string{store.HashKey("sk-runtime"), store.HashKey("sk-revoked")} {
		if err := mem.PutKey(ctx, store.KeyRecord{Hash: h, Name: "k", Tenant: "acme", Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := mem.RevokeKey(ctx, store.HashKey("sk-revoked")); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 15, 13, 0, 0, 0, time.UTC)
	ring := &counting{KeyRing: mem}
	f := &Filter{keys: ring, unknown: newUnknownKeys(2, func() time.Time { return now })}
	call := func(token string) *openaiapi.Error {
		x := &filters.Exchange{ID: "r", Policy: p, Header: filters.Headers{{Key: "authorization", Value: "Bearer " + token}}}
		err := f.RequestHeaders(ctx, x)
		if err == nil {
			return nil
		}
		return filters.AsError(err, x.ID)
	}
	for _, tc := range []struct {
		token       string
		advance     time.Duration
		wantLookups int
		wantMessage string
	}{
		{"sk-nobody", 0, 1, "not valid"},
		{"sk-nobody", 0, 1, "not valid"},
		{"sk-nobody", 29 * time.Second, 1, "not valid"},
		{"sk-revoked", 0, 2, "revoked"},
		{"sk-revoked", 0, 2, "revoked"},
		{"sk-nobody", 2 * time.Second, 3, "not valid"}, // 31 s on: looked up again
		{"sk-runtime", 0, 4, ""},
		{"sk-runtime", 0, 5, ""},
	} {
		now = now.Add(tc.advance)
		e := call(tc.token)
		switch {
		case tc.wantMessage == "" && e != nil:
			t.Fatalf("%s: refused: %v", tc.token, e)
		case tc.wantMessage != "" && (e == nil || e.Status != 401 || !strings.Contains(e.Message, tc.wantMessage)):
			t.Fatalf("%s: got %+v, want 401 %q", tc.token, e, tc.wantMessage)
		}
		if ring.lookups != tc.wantLookups {
			t.Fatalf("%s: %d store lookups, want %d", tc.token, ring.lookups, tc.wantLookups)
		}
	}
	// Bounded: with room for two, a third unknown key pushes the oldest out.
	for _, k := range []string{"sk-a", "sk-b", "sk-c", "sk-a"} {
		call(k)
	}
	if ring.lookups != 9 {
		t.Errorf("%d lookups after four calls with three unknown keys in a cache of two; want 9", ring.lookups)
	}
}
