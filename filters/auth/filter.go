// Package auth is the filter that authenticates virtual keys.
//
// A client sends "Authorization: Bearer <virtual key>", or, as Anthropic's
// clients do, "X-Api-Key: <virtual key>". The filter hashes
// the key with SHA-256 and looks the hash up among the policy's keys, then
// among the keys issued at runtime through the admin API, which live in the
// shared store; the key itself is never stored, logged or forwarded. A
// runtime key is read from the store on every request, so a revocation
// holds on every replica at once; a key the store does not know (or knows
// revoked) is remembered as such for 30 seconds, so a client retrying with
// a wrong key costs no store lookup per request. A known key makes the caller its tenant
// (and app); anything else is refused with 401 in the OpenAI envelope. The
// client's Authorization header is removed from the request before it can
// reach a provider.
//
// An X-Switchyard-App header names the calling app, but only among the
// apps of the key's tenant, and never another app than the one a key is
// bound to. A refusal after the key is known is the key's tenant's: its
// ledger row names the tenant, the key and the key's app.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/state/store"
)

func init() { filters.Register("auth", New) }

// storeTimeout bounds the runtime-key lookup; a store that does not answer
// in time refuses the key rather than hold the request.
const storeTimeout = time.Second

// Filter authenticates virtual keys.
type Filter struct {
	keys    store.KeyRing // nil: policy keys only
	unknown *unknownKeys  // nil: no negative cache
}

// New builds the auth filter; it takes no arguments.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	if err := filterspec.NoArgs(ref); err != nil {
		return nil, err
	}
	f := &Filter{}
	if deps.Store != nil {
		f.keys = deps.Store
		f.unknown = newUnknownKeys(unknownKeysMax, time.Now)
	}
	return f, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "auth" }

// RequestHeaders implements [filters.RequestHeadersHook].
func (f *Filter) RequestHeaders(ctx context.Context, x *filters.Exchange) error {
	x.RemoveRequestHeader("authorization")
	x.RemoveRequestHeader("x-api-key")
	x.RemoveRequestHeader(filters.HeaderApp)
	h := readHeaders(x.Header)
	token := filters.Bearer(h.authorization)
	if token == "" {
		token = strings.TrimSpace(h.apiKey)
	}
	if token == "" {
		return filters.Reject(http.StatusUnauthorized, openaiapi.TypeInvalidRequest, "missing_api_key",
			"you didn't provide an API key; send it as 'Authorization: Bearer YOUR_KEY' or 'X-Api-Key: YOUR_KEY'")
	}
	sum := sha256.Sum256([]byte(token))
	key := x.Policy.KeyByHash(sum)
	if key == nil {
		var err error
		if key, err = f.runtimeKey(ctx, x.Policy, sum); err != nil {
			return err
		}
	}
	x.Caller = filters.Caller{Tenant: key.Tenant, Key: key, KeyName: key.Name, App: defaultApp(key)}
	app, err := callerApp(key, h.app)
	if err != nil {
		return err
	}
	x.Caller.App = app
	return x.SetLabels(key, h.tags, h.session)
}

// callerHeaders are the headers auth reads: the credential, and what the
// caller says of itself.
type callerHeaders struct {
	authorization, apiKey, app, tags, session string
}

// readHeaders reads the caller's headers in one pass over the request's,
// the first non-empty value of each: a header a request does not send
// (most send no tags) costs no search of its own.
func readHeaders(hs filters.Headers) callerHeaders {
	var c callerHeaders
	for _, h := range hs {
		var dst *string
		switch h.Key {
		case "authorization":
			dst = &c.authorization
		case "x-api-key":
			dst = &c.apiKey
		case filters.HeaderApp:
			dst = &c.app
		case filters.HeaderTags:
			dst = &c.tags
		case filters.HeaderSession:
			dst = &c.session
		default:
			continue
		}
		if *dst == "" {
			*dst = h.Value
		}
	}
	return c
}

func invalidKey() error {
	return filters.Reject(http.StatusUnauthorized, openaiapi.TypeInvalidRequest, "invalid_api_key", "the API key provided is not valid")
}

func revokedKey() error {
	return filters.Reject(http.StatusUnauthorized, openaiapi.TypeInvalidRequest, "invalid_api_key", "the API key provided has been revoked")
}

// runtimeKey finds a key issued through the admin API.
func (f *Filter) runtimeKey(ctx context.Context, p *policy.Policy, sum [32]byte) (*policy.Key, error) {
	if f.keys == nil {
		return nil, invalidKey()
	}
	if err := f.unknown.refusal(sum); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, err := f.keys.Key(ctx, hex.EncodeToString(sum[:]))
	switch {
	case errors.Is(err, store.ErrNotFound):
		f.unknown.remember(sum, false)
		return nil, invalidKey()
	case errors.Is(err, store.ErrUnavailable):
		return nil, filters.Reject(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "key_store_unavailable",
			"the gateway cannot check this API key right now; try again shortly").WithHeader("retry-after", "1")
	case err != nil:
		return nil, err
	case rec.Revoked:
		f.unknown.remember(sum, true)
		return nil, revokedKey()
	}
	var tenant *policy.Tenant
	for _, t := range p.Tenants {
		if t.Name == rec.Tenant {
			tenant = t
		}
	}
	if tenant == nil {
		// The tenant left the policy; its runtime keys went with it.
		return nil, invalidKey()
	}
	return KeyOf(rec, tenant, sum), nil
}

// KeyOf is the policy form of a runtime key record, with its own limits
// and model allowlist.
func KeyOf(rec store.KeyRecord, t *policy.Tenant, hash [32]byte) *policy.Key {
	l := rec.Limits
	k := &policy.Key{
		Name: rec.Name, App: rec.App, Tenant: t, Hash: hash,
		RateLimit: policy.RateLimit{
			ReplenishRate: l.ReplenishRate, BurstCapacity: int(l.BurstCapacity),
			RequestsPerMinute: int(l.RequestsPerMinute), TokensPerMinute: int(l.TokensPerMinute), FailOpen: true,
		},
		Budget:                  policy.Budget{DailyMicros: l.DailyBudget, MonthlyMicros: l.MonthlyBudget, FailOpen: true},
		MaxCostPerRequestMicros: l.MaxCostPerRequest,
		Tags:                    rec.Tags,
	}
	if len(rec.Models) > 0 {
		k.Models = make(map[string]bool, len(rec.Models))
		for _, m := range rec.Models {
			k.Models[m] = true
		}
	}
	return k
}

// callerApp is the app a request acts as: the one X-Switchyard-App names
// among its tenant's apps, else the key's (bound or default), else the
// tenant's default.
func callerApp(k *policy.Key, header string) (string, error) {
	app := strings.TrimSpace(header)
	switch {
	case app == "":
		return defaultApp(k), nil
	case k.App != "" && app != k.App:
		return "", filters.Reject(http.StatusForbidden, openaiapi.TypePermission, "app_not_allowed",
			"this API key belongs to app %q and may not act as app %q", k.App, app)
	case k.Tenant.Apps[app] == nil:
		return "", filters.Reject(http.StatusForbidden, openaiapi.TypePermission, "unknown_app",
			"X-Switchyard-App names %q, which is not an app of your tenant", app)
	}
	return app, nil
}

// defaultApp is the app of a key's request that names none.
func defaultApp(k *policy.Key) string {
	switch {
	case k.App != "":
		return k.App
	case k.DefaultApp != "":
		return k.DefaultApp
	}
	return k.Tenant.DefaultApp
}

var _ filters.RequestHeadersHook = (*Filter)(nil)
