package store

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script loads lua/<name>.lua behind the shared helpers in lua/lib.lua. The
// "#!lua" shebang makes Redis 7 refuse, in cluster mode, any key outside the
// slot of the declared keys, including keys a script builds itself, so a
// layout mistake fails loudly instead of working only on a single server.
func script(name string) *redis.Script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err) // embedded at build time: cannot happen
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return redis.NewScript("#!lua\n" + string(lib) + "\n" + string(body))
}

var (
	bucketScript       = script("bucket")
	windowsAddScript   = script("windows_add")
	windowAdjustScript = script("window_adjust")
	reserveScript      = script("reserve")
	settleScript       = script("settle")
	admitScript        = script("admit")
	budgetScript       = script("budget")
	sweepScript        = script("sweep")
	keyPutScript       = script("key_put")
	keyRevokeScript    = script("key_revoke")
	keyListScript      = script("key_list")
	healthSetScript    = script("health_set")
	sketchPutScript    = script("sketch_put")
	sketchGetScript    = script("sketch_get")
	tallyAddScript     = script("tally_add")
	tallyGetScript     = script("tally_get")
)

// Redis is the store shared by gateway replicas. It works with a single
// server or a cluster client: every script's keys share one hash tag. See
// README.md for the key layout and each script's contract.
type Redis struct {
	c           redis.UniversalClient
	prefix      string
	clock       Clock // nil: Redis TIME
	retention   time.Duration
	revokedKeys time.Duration
	metrics     *Metrics

	// tenants remembers which tenants this process has added to the sweep
	// index, to skip the extra round trip on later reservations.
	tenants sync.Map
}

// NewRedis returns a store on client; the caller owns and closes the client.
func NewRedis(client redis.UniversalClient, o Options) *Redis {
	prefix := o.Prefix
	if prefix == "" {
		prefix = "sy"
	}
	return &Redis{c: client, prefix: prefix, clock: o.Clock, retention: o.retention(), revokedKeys: o.revokedKeyRetention(), metrics: o.Metrics}
}

// now is the time argument of every script: empty lets the script read the
// server clock.
func (r *Redis) now() string {
	if r.clock == nil {
		return ""
	}
	return strconv.FormatInt(r.clock.Now().UnixMicro(), 10)
}

// fail classifies err: an unreachable or not-serving server, or a timeout,
// becomes ErrUnavailable (counted); a cancelled call or a reply error from a
// serving Redis stays a plain error.
func (r *Redis) fail(op string, err error) error {
	if errors.Is(err, context.Canceled) || isServerFault(err) {
		return fmt.Errorf("store %s: %w", op, err)
	}
	r.metrics.outage(op)
	return fmt.Errorf("store %s: %w: %w", op, ErrUnavailable, err)
}

// isServerFault reports a reply error from a serving Redis (a script bug, a
// wrong type): retrying elsewhere would not help, so it is not an outage.
// Replies that mean the server cannot serve right now are outages.
func isServerFault(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	return !(redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err) || redis.IsMaxClientsError(err) ||
		redis.HasErrorPrefix(err, "BUSY"))
}

func (r *Redis) run(ctx context.Context, op string, s *redis.Script, keys []string, args ...any) ([]any, error) {
	v, err := s.Run(ctx, r.c, keys, args...).Slice()
	if err != nil {
		return nil, r.fail(op, err)
	}
	return v, nil
}

// Keys. Each group of keys that a script touches together shares one hash
// tag: {ten:tenant}, {bkt:name}, {win:group}, {vkeys}, {health}. Buckets
// and window groups that belong to a tenant (tenantOf) live under the
// tenant's tag, beside its budgets, so that Admit and Settle are one
// script each.

func (r *Redis) bucketKey(name string) string {
	if t, ok := tenantOf(name); ok {
		return r.tenantBase(t) + "bkt:" + name
	}
	return r.prefix + ":{bkt:" + name + "}"
}

func (r *Redis) windowBase(group string) string {
	if t, ok := tenantOf(group); ok {
		return r.tenantBase(t) + "win:" + group + ":"
	}
	return r.prefix + ":{win:" + group + "}:"
}

func (r *Redis) tenantBase(tenant string) string { return r.prefix + ":{ten:" + tenant + "}:" }

func (r *Redis) expiryKey(tenant string) string { return r.tenantBase(tenant) + "rexp" }
func (r *Redis) resKey(id ReservationID) string { return r.tenantBase(id.Tenant) + "res:" + id.Request }
func (r *Redis) tenantsKey() string             { return r.prefix + ":tenants" }
func (r *Redis) keyPrefix() string              { return r.prefix + ":{vkeys}:key:" }
func (r *Redis) keyIndex(tenant string) string  { return r.prefix + ":{vkeys}:tenant:" + tenant }
func (r *Redis) healthKey() string              { return r.prefix + ":{health}:state" }
func (r *Redis) drillsKey() string              { return r.prefix + ":{health}:drills" }

// windowKey is the counter of one window of a line.
func (r *Redis) windowKey(ref WindowRef) string {
	return r.windowBase(ref.Group) + ref.Name + ":" + strconv.FormatInt(ref.startMillis(), 10)
}

// TakeTokens implements Limits.
func (r *Redis) TakeTokens(ctx context.Context, b Bucket, requested int64) (BucketResult, error) {
	if err := b.check(requested); err != nil {
		return BucketResult{}, err
	}
	v, err := r.run(ctx, "take_tokens", bucketScript, []string{r.bucketKey(b.Name)},
		r.now(), strconv.FormatFloat(b.ReplenishRate, 'g', -1, 64), b.BurstCapacity, requested, b.ttl().Milliseconds())
	if err != nil {
		return BucketResult{}, err
	}
	n, err := ints(v, 3)
	if err != nil {
		return BucketResult{}, fmt.Errorf("store take_tokens: %w", err)
	}
	return BucketResult{Allowed: n[0] == 1, Remaining: n[1], RetryAfter: time.Duration(n[2]) * time.Microsecond}, nil
}

// AddWindows implements Limits.
func (r *Redis) AddWindows(ctx context.Context, group string, lines []WindowLine) (WindowResult, error) {
	if err := checkWindows(group, lines); err != nil {
		return WindowResult{}, err
	}
	c := r.windowsCall(group, lines)
	v, err := r.run(ctx, "add_windows", c.s, c.keys, c.args...)
	if err != nil {
		return WindowResult{}, err
	}
	return readWindows(group, lines, v)
}

// windowsCall is the windows_add script run of one AddWindows.
func (r *Redis) windowsCall(group string, lines []WindowLine) scriptCall {
	base := r.windowBase(group)
	args := []any{r.now(), base, len(lines)}
	for _, l := range lines {
		args = append(args, l.Name, l.Limit, l.Size.Milliseconds(), l.Amount)
	}
	return scriptCall{windowsAddScript, []string{base}, args}
}

// readWindows decodes the windows_add script's reply.
func readWindows(group string, lines []WindowLine, v []any) (WindowResult, error) {
	n, err := ints(v, 2+2*len(lines))
	if err != nil {
		return WindowResult{}, fmt.Errorf("store add_windows: %w", err)
	}
	res := WindowResult{Allowed: n[0] == 0, Refused: int(n[0]) - 1, Lines: make([]WindowState, len(lines))}
	for i, l := range lines {
		res.Lines[i] = windowState(group, l, n[2+2*i], n[3+2*i], n[1])
	}
	return res, nil
}

// AdjustWindow implements Limits.
func (r *Redis) AdjustWindow(ctx context.Context, ref WindowRef, delta int64) (bool, error) {
	if err := ref.check(delta); err != nil {
		return false, err
	}
	v, err := windowAdjustScript.Run(ctx, r.c, []string{r.windowKey(ref)}, r.now(), ref.endMillis(), delta).Int64()
	if err != nil {
		return false, r.fail("adjust_window", err)
	}
	return v == 1, nil
}

// Reserve implements Budgets.
func (r *Redis) Reserve(ctx context.Context, id ReservationID, lines []BudgetLine, amount int64, ttl time.Duration) error {
	if err := checkReserve(id, lines, amount, ttl); err != nil {
		return err
	}
	if err := r.indexTenant(ctx, "reserve", id.Tenant); err != nil {
		return err
	}
	args := []any{r.now(), r.tenantBase(id.Tenant), id.Request, amount, ttl.Microseconds(), r.retention.Milliseconds(), len(lines)}
	for _, l := range lines {
		args = append(args, l.Scope.String(), l.Period.code(), l.Limit)
	}
	v, err := r.run(ctx, "reserve", reserveScript, []string{r.expiryKey(id.Tenant), r.resKey(id)}, args...)
	if err != nil {
		return err
	}
	n, err := ints(v, 2)
	if err != nil {
		return fmt.Errorf("store reserve: %w", err)
	}
	r.metrics.expiredN(int(n[1]))
	switch n[0] {
	case 1:
		return nil
	case -1:
		return ErrDuplicateReservation
	}
	n, err = ints(v, 4)
	if err != nil || n[2] < 1 || int(n[2]) > len(lines) {
		return fmt.Errorf("store reserve: bad refusal reply %v", v)
	}
	return &BudgetExceededError{Line: lines[n[2]-1], Remaining: n[3], Requested: amount}
}

// indexTenant adds the tenant to the index Sweep walks, once per process.
func (r *Redis) indexTenant(ctx context.Context, op, tenant string) error {
	if _, known := r.tenants.Load(tenant); known {
		return nil
	}
	if err := r.c.SAdd(ctx, r.tenantsKey(), tenant).Err(); err != nil {
		return r.fail(op, err)
	}
	r.tenants.Store(tenant, true)
	return nil
}

func (r *Redis) settle(ctx context.Context, op string, id ReservationID, actual int64) (Outcome, error) {
	if err := id.check(); err != nil {
		return 0, err
	}
	v, err := r.run(ctx, op, settleScript, []string{r.expiryKey(id.Tenant), r.resKey(id)},
		id.Request, actual, r.retention.Milliseconds())
	if err != nil {
		return 0, err
	}
	return settleOutcome(op, v)
}

// settleOutcome reads the outcome code that starts a settle reply.
func settleOutcome(op string, v []any) (Outcome, error) {
	n, err := ints(v, 1)
	if err != nil {
		return 0, fmt.Errorf("store %s: %w", op, err)
	}
	if n[0] == 0 {
		return 0, ErrUnknownReservation
	}
	return Outcome(n[0]), nil
}

// Commit implements Budgets.
func (r *Redis) Commit(ctx context.Context, id ReservationID, actual int64) (Outcome, error) {
	if err := checkMoney("actual", actual); err != nil {
		return 0, err
	}
	return r.settle(ctx, "commit", id, actual)
}

// Release implements Budgets.
func (r *Redis) Release(ctx context.Context, id ReservationID) (Outcome, error) {
	return r.settle(ctx, "release", id, -1)
}

// Budget implements Budgets.
func (r *Redis) Budget(ctx context.Context, line BudgetLine) (BudgetState, error) {
	if err := line.check(); err != nil {
		return BudgetState{}, err
	}
	t := line.Scope.Tenant
	v, err := r.run(ctx, "budget", budgetScript, []string{r.expiryKey(t)},
		r.now(), r.tenantBase(t), r.retention.Milliseconds(), line.Scope.String(), line.Period.code())
	if err != nil {
		return BudgetState{}, err
	}
	code, ok := v[0].(string)
	if len(v) != 29 || !ok {
		return BudgetState{}, fmt.Errorf("store budget: bad reply %v", v)
	}
	n, err := ints(v[1:], 28)
	if err != nil {
		return BudgetState{}, fmt.Errorf("store budget: %w", err)
	}
	r.metrics.expiredN(int(n[1]))
	st := BudgetState{CurrentHour: int(n[0]), Spent: n[2], Reserved: n[3]}
	copy(st.Hourly[:], n[4:])
	return finishBudget(st, line.Limit, code)
}

// Sweep implements Budgets, tenant by tenant from the index that Reserve
// maintains.
func (r *Redis) Sweep(ctx context.Context) (int, error) {
	tenants, err := r.c.SMembers(ctx, r.tenantsKey()).Result()
	if err != nil {
		return 0, r.fail("sweep", err)
	}
	total := 0
	for _, t := range tenants {
		n, err := sweepScript.Run(ctx, r.c, []string{r.expiryKey(t)}, r.now(), r.tenantBase(t), r.retention.Milliseconds()).Int64()
		if err != nil {
			return total, r.fail("sweep", err)
		}
		total += int(n)
	}
	r.metrics.expiredN(total)
	return total, nil
}

// keyDoc is the stored form of a KeyRecord; revocation lives beside it in its
// own hash field so that revoking never rewrites the record.
type keyDoc struct {
	Name    string            `json:"name"`
	Tenant  string            `json:"tenant"`
	App     string            `json:"app,omitempty"`
	Models  []string          `json:"models,omitempty"`
	Limits  KeyLimits         `json:"limits"`
	Tags    map[string]string `json:"tags,omitempty"`
	Created time.Time         `json:"created"`
}

// PutKey implements KeyRing.
func (r *Redis) PutKey(ctx context.Context, rec KeyRecord) error {
	if err := rec.check(); err != nil {
		return err
	}
	rec = rec.normalised()
	doc, err := json.Marshal(keyDoc{Name: rec.Name, Tenant: rec.Tenant, App: rec.App, Models: rec.Models, Limits: rec.Limits, Tags: rec.Tags, Created: rec.Created})
	if err != nil {
		return fmt.Errorf("store put_key: %w", err)
	}
	err = keyPutScript.Run(ctx, r.c, []string{r.keyPrefix() + rec.Hash, r.keyIndex(rec.Tenant)},
		doc, rec.Tenant, rec.Hash, r.prefix+":{vkeys}:tenant:").Err()
	if err != nil {
		return r.fail("put_key", err)
	}
	return nil
}

// Key implements KeyRing. It is one HMGET, cheap enough for every request.
func (r *Redis) Key(ctx context.Context, hash string) (KeyRecord, error) {
	if err := checkHash(hash); err != nil {
		return KeyRecord{}, err
	}
	v, err := r.c.HMGet(ctx, r.keyPrefix()+hash, "rec", "revoked").Result()
	if err != nil {
		return KeyRecord{}, r.fail("key", err)
	}
	doc, ok := v[0].(string)
	if !ok {
		return KeyRecord{}, ErrNotFound
	}
	revoked, _ := v[1].(string)
	return decodeKey(hash, doc, revoked)
}

func decodeKey(hash, doc, revoked string) (KeyRecord, error) {
	var d keyDoc
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		return KeyRecord{}, fmt.Errorf("store key: decode record: %w", err)
	}
	rec := KeyRecord{Hash: hash, Name: d.Name, Tenant: d.Tenant, App: d.App, Models: d.Models, Limits: d.Limits, Tags: d.Tags, Created: d.Created.UTC()}
	if revoked != "" {
		us, err := strconv.ParseInt(revoked, 10, 64)
		if err != nil {
			return KeyRecord{}, fmt.Errorf("store key: decode revocation: %w", err)
		}
		rec.Revoked, rec.RevokedAt = true, time.UnixMicro(us).UTC()
	}
	return rec, nil
}

// TenantKeys implements KeyRing.
func (r *Redis) TenantKeys(ctx context.Context, tenant string) ([]KeyRecord, error) {
	if err := checkSegment("tenant", tenant); err != nil {
		return nil, err
	}
	v, err := r.run(ctx, "tenant_keys", keyListScript, []string{r.keyIndex(tenant)}, r.keyPrefix())
	if err != nil {
		return nil, err
	}
	out := make([]KeyRecord, 0, len(v)/3)
	for i := 0; i+2 < len(v); i += 3 {
		hash, _ := v[i].(string)
		doc, _ := v[i+1].(string)
		revoked, _ := v[i+2].(string)
		rec, err := decodeKey(hash, doc, revoked)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	sortKeys(out)
	return out, nil
}

// RevokeKey implements KeyRing.
func (r *Redis) RevokeKey(ctx context.Context, hash string) error {
	if err := checkHash(hash); err != nil {
		return err
	}
	n, err := keyRevokeScript.Run(ctx, r.c, []string{r.keyPrefix() + hash}, r.now(), r.revokedKeys.Milliseconds()).Int64()
	if err != nil {
		return r.fail("revoke_key", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// SetHealth implements HealthBoard.
func (r *Redis) SetHealth(ctx context.Context, provider, state string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	if err := healthSetScript.Run(ctx, r.c, []string{r.healthKey()}, r.now(), provider, state).Err(); err != nil {
		return r.fail("set_health", err)
	}
	return nil
}

// Health implements HealthBoard.
func (r *Redis) Health(ctx context.Context, provider string) (ProviderHealth, error) {
	if err := checkProvider(provider); err != nil {
		return ProviderHealth{}, err
	}
	v, err := r.c.HGet(ctx, r.healthKey(), provider).Result()
	if errors.Is(err, redis.Nil) {
		return ProviderHealth{}, ErrNotFound
	}
	if err != nil {
		return ProviderHealth{}, r.fail("health", err)
	}
	return parseHealth(provider, v)
}

// Healths implements HealthBoard.
func (r *Redis) Healths(ctx context.Context) ([]ProviderHealth, error) {
	all, err := r.c.HGetAll(ctx, r.healthKey()).Result()
	if err != nil {
		return nil, r.fail("healths", err)
	}
	out := make([]ProviderHealth, 0, len(all))
	for provider, v := range all {
		h, err := parseHealth(provider, v)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b ProviderHealth) int { return strings.Compare(a.Provider, b.Provider) })
	return out, nil
}

// parseHealth reads a health record, "<µs>|<state>".
func parseHealth(provider, v string) (ProviderHealth, error) {
	stamp, state, ok := strings.Cut(v, "|")
	us, err := strconv.ParseInt(stamp, 10, 64)
	if !ok || err != nil {
		return ProviderHealth{}, fmt.Errorf("store health: bad record for %s", provider)
	}
	return ProviderHealth{Provider: provider, State: state, Updated: time.UnixMicro(us).UTC()}, nil
}

// SetDrill implements HealthBoard.
func (r *Redis) SetDrill(ctx context.Context, provider string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	if err := r.c.SAdd(ctx, r.drillsKey(), provider).Err(); err != nil {
		return r.fail("set_drill", err)
	}
	return nil
}

// ClearDrill implements HealthBoard.
func (r *Redis) ClearDrill(ctx context.Context, provider string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	if err := r.c.SRem(ctx, r.drillsKey(), provider).Err(); err != nil {
		return r.fail("clear_drill", err)
	}
	return nil
}

// Drills implements HealthBoard.
func (r *Redis) Drills(ctx context.Context) ([]string, error) {
	v, err := r.c.SMembers(ctx, r.drillsKey()).Result()
	if err != nil {
		return nil, r.fail("drills", err)
	}
	slices.Sort(v)
	return v, nil
}

// ints converts the first n elements of a script reply to int64.
func ints(v []any, n int) ([]int64, error) {
	if len(v) < n {
		return nil, fmt.Errorf("reply has %d values, want %d", len(v), n)
	}
	out := make([]int64, n)
	for i := range n {
		x, ok := v[i].(int64)
		if !ok {
			return nil, fmt.Errorf("reply value %d is %T, want integer", i, v[i])
		}
		out[i] = x
	}
	return out, nil
}

var _ Store = (*Redis)(nil)
