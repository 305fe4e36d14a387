package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openai"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// keyRoutes are the virtual-key API: issue, list, rotate and revoke keys
// at runtime. Keys live in the shared store, so every replica sees a change
// at once; the secret is returned once, by issue and rotate, and never
// stored, listed or logged.
func (f *Filter) keyRoutes() map[string]handler {
	return map[string]handler{
		"POST keys":          f.issueKey,
		"GET keys":           f.listKeys,
		"POST keys/*/rotate": f.rotateKey,
		"DELETE keys/*":      f.revokeKey,
	}
}

// secretPrefix starts every key the API issues, so a leaked one is easy to
// recognise (and to scan for).
const secretPrefix = "sk-sy-"

// newSecret returns a fresh virtual key: 256 random bits.
func newSecret() string { return secretPrefix + rand.Text() + rand.Text() }

// keyNameRE is what a runtime key may be called: the name becomes part of
// store keys and log lines, so it stays plain.
var keyNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`)

// keyRequest is the body of POST /admin/keys.
type keyRequest struct {
	Tenant               string         `json:"tenant"`
	Name                 string         `json:"name"`
	App                  string         `json:"app,omitempty"`
	Models               []string       `json:"models,omitempty"`
	RateLimit            *rateLimitJSON `json:"rate_limit,omitempty"`
	Budget               *budgetJSON    `json:"budget_usd,omitempty"`
	MaxCostPerRequestUSD *float64       `json:"max_cost_per_request_usd,omitempty"`
}

type rateLimitJSON struct {
	ReplenishRate     float64 `json:"replenish_rate,omitempty"`
	BurstCapacity     int64   `json:"burst_capacity,omitempty"`
	RequestsPerMinute int64   `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int64   `json:"tokens_per_minute,omitempty"`
}

type budgetJSON struct {
	Daily   *float64 `json:"daily,omitempty"`
	Monthly *float64 `json:"monthly,omitempty"`
}

// keyView is a key as the API shows it: never the secret, except in the
// answer that issued it.
type keyView struct {
	Object     string         `json:"object"`
	Name       string         `json:"name"`
	Tenant     string         `json:"tenant"`
	App        string         `json:"app,omitempty"`
	Source     string         `json:"source"` // policy (YAML) or api
	HashPrefix string         `json:"hash_prefix"`
	Models     []string       `json:"models,omitempty"`
	RateLimit  *rateLimitJSON `json:"rate_limit,omitempty"`
	Budget     *budgetJSON    `json:"budget_usd,omitempty"`
	MaxCostUSD *float64       `json:"max_cost_per_request_usd,omitempty"`
	Created    *time.Time     `json:"created,omitempty"`
	Revoked    bool           `json:"revoked"`
	RevokedAt  *time.Time     `json:"revoked_at,omitempty"`
	// Key is the secret, shown once.
	Key string `json:"key,omitempty"`
}

func badKey(param, format string, args ...any) error {
	return filters.Reject(http.StatusBadRequest, openai.TypeInvalidRequest, "invalid_key_request", format, args...).WithParam(param)
}

func storeDown() error {
	return filters.Reject(http.StatusServiceUnavailable, openai.TypeServer, "store_unavailable",
		"the key store is unavailable; nothing was changed").WithHeader("retry-after", "1")
}

// storeErr turns a store failure into the admin API's answer.
func storeErr(err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return storeDown()
	}
	return err
}

func (f *Filter) keyRing() (store.KeyRing, error) {
	if f.store == nil {
		return nil, storeDown()
	}
	return f.store, nil
}

func tenantNamed(p *policy.Policy, name string) *policy.Tenant {
	for _, t := range p.Tenants {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func unknownTenant(name string) error {
	return filters.Reject(http.StatusNotFound, openai.TypeInvalidRequest, "unknown_tenant", "no tenant %q in the policy", name).WithParam("tenant")
}

// record validates a key request against the policy and builds its record.
func (r *keyRequest) record(p *policy.Policy) (store.KeyRecord, error) {
	t := tenantNamed(p, r.Tenant)
	if t == nil {
		return store.KeyRecord{}, unknownTenant(r.Tenant)
	}
	if !keyNameRE.MatchString(r.Name) {
		return store.KeyRecord{}, badKey("name", "name must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if r.App != "" && t.Apps[r.App] == nil {
		return store.KeyRecord{}, badKey("app", "tenant %s has no app %q", t.Name, r.App)
	}
	for _, m := range r.Models {
		if !p.Nameable(m) || (t.Models != nil && !t.Models[m]) {
			return store.KeyRecord{}, badKey("models", "model %q is not a model of tenant %s", m, t.Name)
		}
	}
	rec := store.KeyRecord{Name: r.Name, Tenant: t.Name, App: r.App, Models: r.Models}
	if rl := r.RateLimit; rl != nil {
		switch {
		case rl.ReplenishRate < 0 || rl.BurstCapacity < 0 || rl.RequestsPerMinute < 0 || rl.TokensPerMinute < 0:
			return rec, badKey("rate_limit", "rate limits must be >= 0")
		case (rl.ReplenishRate > 0) != (rl.BurstCapacity > 0):
			return rec, badKey("rate_limit", "replenish_rate and burst_capacity go together")
		case rl.BurstCapacity > 0 && float64(rl.BurstCapacity) < rl.ReplenishRate:
			return rec, badKey("rate_limit", "burst_capacity must be >= replenish_rate")
		case rl.ReplenishRate == 0 && rl.RequestsPerMinute == 0 && rl.TokensPerMinute == 0:
			return rec, badKey("rate_limit", "sets no limit")
		}
		rec.Limits.ReplenishRate, rec.Limits.BurstCapacity = rl.ReplenishRate, rl.BurstCapacity
		rec.Limits.RequestsPerMinute, rec.Limits.TokensPerMinute = rl.RequestsPerMinute, rl.TokensPerMinute
	}
	var err error
	if b := r.Budget; b != nil {
		if b.Daily == nil && b.Monthly == nil {
			return rec, badKey("budget_usd", "sets neither daily nor monthly")
		}
		if rec.Limits.DailyBudget, err = micros("budget_usd.daily", b.Daily); err != nil {
			return rec, err
		}
		if rec.Limits.MonthlyBudget, err = micros("budget_usd.monthly", b.Monthly); err != nil {
			return rec, err
		}
	}
	if rec.Limits.MaxCostPerRequest, err = micros("max_cost_per_request_usd", r.MaxCostPerRequestUSD); err != nil {
		return rec, err
	}
	return rec, nil
}

// micros converts a positive USD amount to micro-USD; nil is 0 (no cap).
func micros(param string, usd *float64) (int64, error) {
	if usd == nil {
		return 0, nil
	}
	if v := *usd; math.IsNaN(v) || v <= 0 || v > 1e9 {
		return 0, badKey(param, "%s must be a positive amount of USD", param)
	}
	return int64(math.Round(*usd * 1e6)), nil
}

func usd(micros int64) *float64 {
	if micros == 0 {
		return nil
	}
	v := float64(micros) / 1e6
	return &v
}

// liveNamed returns the tenant's runtime records called name that are not
// revoked.
func liveNamed(ctx context.Context, ring store.KeyRing, tenant, name string) ([]store.KeyRecord, error) {
	recs, err := ring.TenantKeys(ctx, tenant)
	if err != nil {
		return nil, storeErr(err)
	}
	var out []store.KeyRecord
	for _, r := range recs {
		if r.Name == name && !r.Revoked {
			out = append(out, r)
		}
	}
	return out, nil
}

func policyKeyNamed(t *policy.Tenant, name string) *policy.Key {
	for _, k := range t.Keys {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// issueKey answers POST /admin/keys: a new key whose secret is in this
// answer and nowhere else. Names are unique within a tenant, policy keys
// included; two admins issuing the same name at the same instant on two
// replicas can still both succeed, and then rotate and revoke act on both.
func (f *Filter) issueKey(ctx context.Context, x *filters.Exchange, _ string) (int, any, error) {
	ring, err := f.keyRing()
	if err != nil {
		return 0, nil, err
	}
	var req keyRequest
	if err := decode(x, &req); err != nil {
		return 0, nil, err
	}
	rec, err := req.record(x.Policy)
	if err != nil {
		return 0, nil, err
	}
	live, err := liveNamed(ctx, ring, rec.Tenant, rec.Name)
	if err != nil {
		return 0, nil, err
	}
	if len(live) > 0 || policyKeyNamed(tenantNamed(x.Policy, rec.Tenant), rec.Name) != nil {
		return 0, nil, filters.Reject(http.StatusConflict, openai.TypeInvalidRequest, "key_exists",
			"tenant %s already has a key named %q; rotate it, or revoke it first", rec.Tenant, rec.Name).WithParam("name")
	}
	secret, view, err := f.put(ctx, ring, rec)
	if err != nil {
		return 0, nil, err
	}
	f.audit(ctx, x, "key.issue", slog.String("tenant", rec.Tenant), slog.String("name", rec.Name),
		slog.String("app", rec.App), slog.String("hash_prefix", view.HashPrefix))
	view.Key = secret
	return http.StatusCreated, view, nil
}

// put stores rec under a fresh secret and returns the secret and the view.
func (f *Filter) put(ctx context.Context, ring store.KeyRing, rec store.KeyRecord) (string, keyView, error) {
	secret := newSecret()
	rec.Hash = store.HashKey(secret)
	rec.Created = time.Now().UTC().Truncate(time.Second)
	rec.Revoked, rec.RevokedAt = false, time.Time{}
	if err := ring.PutKey(ctx, rec); err != nil {
		return "", keyView{}, storeErr(err)
	}
	return secret, runtimeView(rec), nil
}

func runtimeView(r store.KeyRecord) keyView {
	v := keyView{
		Object: "virtual_key", Name: r.Name, Tenant: r.Tenant, App: r.App, Source: "api", HashPrefix: r.Hash[:8],
		Models: r.Models, Revoked: r.Revoked, MaxCostUSD: usd(r.Limits.MaxCostPerRequest),
	}
	if !r.Created.IsZero() {
		c := r.Created
		v.Created = &c
	}
	if r.Revoked {
		at := r.RevokedAt
		v.RevokedAt = &at
	}
	l := r.Limits
	if l.ReplenishRate > 0 || l.RequestsPerMinute > 0 || l.TokensPerMinute > 0 {
		v.RateLimit = &rateLimitJSON{ReplenishRate: l.ReplenishRate, BurstCapacity: l.BurstCapacity, RequestsPerMinute: l.RequestsPerMinute, TokensPerMinute: l.TokensPerMinute}
	}
	if l.DailyBudget > 0 || l.MonthlyBudget > 0 {
		v.Budget = &budgetJSON{Daily: usd(l.DailyBudget), Monthly: usd(l.MonthlyBudget)}
	}
	return v
}

func policyView(k *policy.Key) keyView {
	v := keyView{Object: "virtual_key", Name: k.Name, Tenant: k.Tenant.Name, App: k.App, Source: "policy",
		HashPrefix: hex.EncodeToString(k.Hash[:4]), MaxCostUSD: usd(k.MaxCostPerRequestMicros)}
	for m := range k.Models {
		v.Models = append(v.Models, m)
	}
	slices.Sort(v.Models)
	if rl := k.RateLimit; rl.Set() {
		v.RateLimit = &rateLimitJSON{ReplenishRate: rl.ReplenishRate, BurstCapacity: int64(rl.BurstCapacity),
			RequestsPerMinute: int64(rl.RequestsPerMinute), TokensPerMinute: int64(rl.TokensPerMinute)}
	}
	if b := k.Budget; b.Set() {
		v.Budget = &budgetJSON{Daily: usd(b.DailyMicros), Monthly: usd(b.MonthlyMicros)}
	}
	return v
}

// listKeys answers GET /admin/keys[?tenant=]: the keys of one tenant, or
// of all, from the policy and from the API, revoked ones included.
func (f *Filter) listKeys(ctx context.Context, x *filters.Exchange, _ string) (int, any, error) {
	ring, err := f.keyRing()
	if err != nil {
		return 0, nil, err
	}
	q, _ := url.ParseQuery(x.Query)
	tenants := x.Policy.Tenants
	if name := q.Get("tenant"); name != "" {
		t := tenantNamed(x.Policy, name)
		if t == nil {
			return 0, nil, unknownTenant(name)
		}
		tenants = []*policy.Tenant{t}
	}
	data := []keyView{}
	for _, t := range tenants {
		for _, k := range t.Keys {
			data = append(data, policyView(k))
		}
		recs, err := ring.TenantKeys(ctx, t.Name)
		if err != nil {
			return 0, nil, storeErr(err)
		}
		for _, r := range recs {
			data = append(data, runtimeView(r))
		}
	}
	f.audit(ctx, x, "key.list", slog.String("tenant", q.Get("tenant")))
	return http.StatusOK, map[string]any{"object": "list", "data": data}, nil
}

// named finds the live runtime keys called name: in the tenant the query
// names, or in the one tenant that has such a key. It returns them with
// the key ring that holds them.
func (f *Filter) named(ctx context.Context, x *filters.Exchange, name string) (store.KeyRing, *policy.Tenant, []store.KeyRecord, error) {
	ring, err := f.keyRing()
	if err != nil {
		return nil, nil, nil, err
	}
	q, _ := url.ParseQuery(x.Query)
	tenants := x.Policy.Tenants
	if tn := q.Get("tenant"); tn != "" {
		t := tenantNamed(x.Policy, tn)
		if t == nil {
			return nil, nil, nil, unknownTenant(tn)
		}
		tenants = []*policy.Tenant{t}
	}
	var (
		found   *policy.Tenant
		recs    []store.KeyRecord
		holders []string
	)
	for _, t := range tenants {
		if policyKeyNamed(t, name) != nil {
			return nil, nil, nil, filters.Reject(http.StatusConflict, openai.TypeInvalidRequest, "policy_key",
				"key %q of tenant %s is defined in the policy; change or remove it there", name, t.Name)
		}
		live, err := liveNamed(ctx, ring, t.Name, name)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(live) > 0 {
			found, recs = t, live
			holders = append(holders, t.Name)
		}
	}
	switch {
	case len(holders) == 0:
		return nil, nil, nil, filters.Reject(http.StatusNotFound, openai.TypeInvalidRequest, "unknown_key", "no live key named %q", name)
	case len(holders) > 1:
		return nil, nil, nil, filters.Reject(http.StatusConflict, openai.TypeInvalidRequest, "ambiguous_key_name",
			"tenants %s each have a key named %q; add ?tenant=", strings.Join(holders, ", "), name)
	}
	return ring, found, recs, nil
}

// revoke refuses the keys recs from now on, on every replica.
func revoke(ctx context.Context, ring store.KeyRing, recs []store.KeyRecord) error {
	for _, r := range recs {
		if err := ring.RevokeKey(ctx, r.Hash); err != nil {
			return storeErr(err)
		}
	}
	return nil
}

// rotateKey answers POST /admin/keys/{name}/rotate[?tenant=]: a new secret
// for the key, with the same tenant, app, models and limits; the old
// secret is refused from then on.
func (f *Filter) rotateKey(ctx context.Context, x *filters.Exchange, name string) (int, any, error) {
	ring, t, recs, err := f.named(ctx, x, name)
	if err != nil {
		return 0, nil, err
	}
	// The new secret works before the old one stops, so a client that
	// switches at once never sees both refused.
	secret, view, err := f.put(ctx, ring, recs[len(recs)-1])
	if err != nil {
		return 0, nil, err
	}
	if err := revoke(ctx, ring, recs); err != nil {
		return 0, nil, err
	}
	f.audit(ctx, x, "key.rotate", slog.String("tenant", t.Name), slog.String("name", name),
		slog.String("hash_prefix", view.HashPrefix), slog.String("revoked_hash_prefix", recs[len(recs)-1].Hash[:8]))
	view.Key = secret
	return http.StatusOK, view, nil
}

// revokeKey answers DELETE /admin/keys/{name}[?tenant=]: the key is refused
// from now on, on every replica.
func (f *Filter) revokeKey(ctx context.Context, x *filters.Exchange, name string) (int, any, error) {
	ring, t, recs, err := f.named(ctx, x, name)
	if err != nil {
		return 0, nil, err
	}
	if err := revoke(ctx, ring, recs); err != nil {
		return 0, nil, err
	}
	f.audit(ctx, x, "key.revoke", slog.String("tenant", t.Name), slog.String("name", name),
		slog.String("hash_prefix", recs[len(recs)-1].Hash[:8]))
	return http.StatusOK, map[string]any{"object": "virtual_key", "name": name, "tenant": t.Name, "revoked": true}, nil
}
