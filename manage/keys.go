package manage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/store"
)

// secretPrefix starts every key the gateway issues, so a leaked one is
// easy to recognise (and to scan for).
const secretPrefix = "sk-sy-"

// newSecret returns a fresh virtual key: 256 random bits.
func newSecret() string { return secretPrefix + rand.Text() + rand.Text() }

// keyNameRE is what a runtime key may be called: the name becomes part of
// store keys and log lines, so it stays plain.
var keyNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`)

// KeyRequest asks for a new key (the body of POST /admin/keys).
type KeyRequest struct {
	Tenant               string     `json:"tenant"`
	Name                 string     `json:"name"`
	App                  string     `json:"app,omitempty"`
	Models               []string   `json:"models,omitempty"`
	RateLimit            *RateLimit `json:"rate_limit,omitempty"`
	Budget               *Budget    `json:"budget_usd,omitempty"`
	MaxCostPerRequestUSD *float64   `json:"max_cost_per_request_usd,omitempty"`
	// Tags are the key's requests' tags where they set none of that key
	// (as a policy key's tags).
	Tags map[string]string `json:"tags,omitempty"`
}

// RateLimit is a key's own rate limits.
type RateLimit struct {
	ReplenishRate     float64 `json:"replenish_rate,omitempty"`
	BurstCapacity     int64   `json:"burst_capacity,omitempty"`
	RequestsPerMinute int64   `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int64   `json:"tokens_per_minute,omitempty"`
}

// Budget is a key's own budgets, in USD.
type Budget struct {
	Daily   *float64 `json:"daily,omitempty"`
	Monthly *float64 `json:"monthly,omitempty"`
}

// Key is a key as an operator sees it: never the secret, except in the
// answer that issued it.
type Key struct {
	Object     string     `json:"object"`
	Name       string     `json:"name"`
	Tenant     string     `json:"tenant"`
	App        string     `json:"app,omitempty"`
	Source     string     `json:"source"` // policy (YAML) or api
	HashPrefix string     `json:"hash_prefix"`
	Models     []string   `json:"models,omitempty"`
	RateLimit  *RateLimit `json:"rate_limit,omitempty"`
	Budget     *Budget    `json:"budget_usd,omitempty"`
	MaxCostUSD *float64   `json:"max_cost_per_request_usd,omitempty"`
	// Tags are the key's requests' default tags.
	Tags      map[string]string `json:"tags,omitempty"`
	Created   *time.Time        `json:"created,omitempty"`
	Revoked   bool              `json:"revoked"`
	RevokedAt *time.Time        `json:"revoked_at,omitempty"`
	// Secret is the key itself, set only in the answer that made it.
	Secret string `json:"key,omitempty"`
}

// Key sources.
const (
	SourcePolicy = "policy"
	SourceAPI    = "api"
)

func badKey(param, format string, args ...any) error {
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_key_request", format, args...).WithParam(param)
}

func storeDown() error {
	return openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServer, "store_unavailable",
		"the key store is unavailable; nothing was changed").WithHeader("retry-after", "1")
}

// storeErr turns a store failure into a refusal.
func storeErr(err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return storeDown()
	}
	return err
}

// TenantNamed returns the tenant of p called name, nil when none is.
func TenantNamed(p *policy.Policy, name string) *policy.Tenant {
	for _, t := range p.Tenants {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func unknownTenant(name string) error {
	return openaiapi.Errorf(http.StatusNotFound, openaiapi.TypeInvalidRequest, "unknown_tenant", "no tenant %q in the policy", name).WithParam("tenant")
}

// record validates a key request against the policy and builds its record.
func (r *KeyRequest) record(p *policy.Policy) (store.KeyRecord, error) {
	t := TenantNamed(p, r.Tenant)
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
	if len(r.Tags) > policy.MaxTags {
		return store.KeyRecord{}, badKey("tags", "at most %d tags", policy.MaxTags)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Tags)) {
		if why := policy.TagProblem(k, r.Tags[k]); why != "" {
			return store.KeyRecord{}, badKey("tags", "%s", why)
		}
	}
	rec := store.KeyRecord{Name: r.Name, Tenant: t.Name, App: r.App, Models: r.Models, Tags: r.Tags}
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

// IssueKey makes a new key whose secret is in the answer and nowhere
// else; ring nil is a store that is down. Names are unique within a
// tenant, policy keys included; two operators issuing the same name at
// the same instant on two replicas can still both succeed, and then
// rotate and revoke act on both.
func IssueKey(ctx context.Context, ring store.KeyRing, p *policy.Policy, req KeyRequest) (Key, error) {
	if ring == nil {
		return Key{}, storeDown()
	}
	rec, err := req.record(p)
	if err != nil {
		return Key{}, err
	}
	live, err := liveNamed(ctx, ring, rec.Tenant, rec.Name)
	if err != nil {
		return Key{}, err
	}
	if len(live) > 0 || policyKeyNamed(TenantNamed(p, rec.Tenant), rec.Name) != nil {
		return Key{}, openaiapi.Errorf(http.StatusConflict, openaiapi.TypeInvalidRequest, "key_exists",
			"tenant %s already has a key named %q; rotate it, or revoke it first", rec.Tenant, rec.Name).WithParam("name")
	}
	return put(ctx, ring, rec)
}

// put stores rec under a fresh secret and returns the key with its secret.
func put(ctx context.Context, ring store.KeyRing, rec store.KeyRecord) (Key, error) {
	secret := newSecret()
	rec.Hash = store.HashKey(secret)
	rec.Created = time.Now().UTC().Truncate(time.Second)
	rec.Revoked, rec.RevokedAt = false, time.Time{}
	if err := ring.PutKey(ctx, rec); err != nil {
		return Key{}, storeErr(err)
	}
	k := runtimeKey(rec)
	k.Secret = secret
	return k, nil
}

func runtimeKey(r store.KeyRecord) Key {
	v := Key{
		Object: "virtual_key", Name: r.Name, Tenant: r.Tenant, App: r.App, Source: SourceAPI, HashPrefix: r.Hash[:8],
		Models: r.Models, Revoked: r.Revoked, MaxCostUSD: usd(r.Limits.MaxCostPerRequest), Tags: r.Tags,
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
		v.RateLimit = &RateLimit{ReplenishRate: l.ReplenishRate, BurstCapacity: l.BurstCapacity, RequestsPerMinute: l.RequestsPerMinute, TokensPerMinute: l.TokensPerMinute}
	}
	if l.DailyBudget > 0 || l.MonthlyBudget > 0 {
		v.Budget = &Budget{Daily: usd(l.DailyBudget), Monthly: usd(l.MonthlyBudget)}
	}
	return v
}

func policyKey(k *policy.Key) Key {
	v := Key{Object: "virtual_key", Name: k.Name, Tenant: k.Tenant.Name, App: k.App, Source: SourcePolicy,
		HashPrefix: hex.EncodeToString(k.Hash[:4]), MaxCostUSD: usd(k.MaxCostPerRequestMicros), Tags: k.Tags}
	for m := range k.Models {
		v.Models = append(v.Models, m)
	}
	slices.Sort(v.Models)
	if rl := k.RateLimit; rl.Set() {
		v.RateLimit = &RateLimit{ReplenishRate: rl.ReplenishRate, BurstCapacity: int64(rl.BurstCapacity),
			RequestsPerMinute: int64(rl.RequestsPerMinute), TokensPerMinute: int64(rl.TokensPerMinute)}
	}
	if b := k.Budget; b.Set() {
		v.Budget = &Budget{Daily: usd(b.DailyMicros), Monthly: usd(b.MonthlyMicros)}
	}
	return v
}

// ListKeys lists the keys of one tenant, or of every tenant when tenant
// is "", from the policy and from the key ring, revoked ones included.
func ListKeys(ctx context.Context, ring store.KeyRing, p *policy.Policy, tenant string) ([]Key, error) {
	if ring == nil {
		return nil, storeDown()
	}
	tenants := p.Tenants
	if tenant != "" {
		t := TenantNamed(p, tenant)
		if t == nil {
			return nil, unknownTenant(tenant)
		}
		tenants = []*policy.Tenant{t}
	}
	keys := []Key{}
	for _, t := range tenants {
		for _, k := range t.Keys {
			keys = append(keys, policyKey(k))
		}
		recs, err := ring.TenantKeys(ctx, t.Name)
		if err != nil {
			return nil, storeErr(err)
		}
		for _, r := range recs {
			keys = append(keys, runtimeKey(r))
		}
	}
	return keys, nil
}

// named finds the live runtime keys called name: in tenant, or when
// tenant is "" in the one tenant that has such a key.
func named(ctx context.Context, ring store.KeyRing, p *policy.Policy, tenant, name string) (*policy.Tenant, []store.KeyRecord, error) {
	if ring == nil {
		return nil, nil, storeDown()
	}
	tenants := p.Tenants
	if tenant != "" {
		t := TenantNamed(p, tenant)
		if t == nil {
			return nil, nil, unknownTenant(tenant)
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
			return nil, nil, openaiapi.Errorf(http.StatusConflict, openaiapi.TypeInvalidRequest, "policy_key",
				"key %q of tenant %s is defined in the policy; change or remove it there", name, t.Name)
		}
		live, err := liveNamed(ctx, ring, t.Name, name)
		if err != nil {
			return nil, nil, err
		}
		if len(live) > 0 {
			found, recs = t, live
			holders = append(holders, t.Name)
		}
	}
	switch {
	case len(holders) == 0:
		return nil, nil, openaiapi.Errorf(http.StatusNotFound, openaiapi.TypeInvalidRequest, "unknown_key", "no live key named %q", name)
	case len(holders) > 1:
		return nil, nil, openaiapi.Errorf(http.StatusConflict, openaiapi.TypeInvalidRequest, "ambiguous_key_name",
			"tenants %s each have a key named %q; add ?tenant=", strings.Join(holders, ", "), name)
	}
	return found, recs, nil
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

// RotateKey gives the key called name (of tenant, or of the one tenant
// that has one when tenant is "") a new secret, with the same tenant,
// app, models and limits; the old secret is refused from then on. It
// returns the new key, with its secret, and the hash prefix of the one it
// revoked.
func RotateKey(ctx context.Context, ring store.KeyRing, p *policy.Policy, tenant, name string) (k Key, revoked string, err error) {
	_, recs, err := named(ctx, ring, p, tenant, name)
	if err != nil {
		return Key{}, "", err
	}
	// The new secret works before the old one stops, so a client that
	// switches at once never sees both refused.
	last := recs[len(recs)-1]
	if k, err = put(ctx, ring, last); err != nil {
		return Key{}, "", err
	}
	if err := revoke(ctx, ring, recs); err != nil {
		return Key{}, "", err
	}
	return k, last.Hash[:8], nil
}

// RevokeKey refuses the key called name (of tenant, or of the one tenant
// that has one when tenant is "") from now on, on every replica. It
// returns the key as it was, without a secret.
func RevokeKey(ctx context.Context, ring store.KeyRing, p *policy.Policy, tenant, name string) (Key, error) {
	_, recs, err := named(ctx, ring, p, tenant, name)
	if err != nil {
		return Key{}, err
	}
	if err := revoke(ctx, ring, recs); err != nil {
		return Key{}, err
	}
	return runtimeKey(recs[len(recs)-1]), nil
}
