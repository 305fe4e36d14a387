package translate

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// secret is a provider key. Wherever it ends up by mistake — a log
// attribute, a formatted error, a %v of a struct — it prints [redacted];
// only string(s), at the one place a key goes into a request, reveals it.
type secret string

const redacted = "[redacted]"

// String implements [fmt.Stringer].
func (secret) String() string { return redacted }

// GoString implements [fmt.GoStringer].
func (secret) GoString() string { return redacted }

// Format implements [fmt.Formatter], so no verb prints the key.
func (secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// LogValue implements [slog.LogValuer].
func (secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// defaultCooldown is how long a key rests after a 401 or a 429 that says
// nothing about when to come back.
const defaultCooldown = time.Minute

// maxCooldown bounds what a provider's retry-after can ask for.
const maxCooldown = time.Hour

// keyPool is a provider's keys, used in turn; a key the provider refused
// (401, 429) rests while the others serve.
type keyPool struct {
	provider string
	keys     []secret
	marks    [][32]byte // SHA-256 of each key: how cooldowns know it
	cool     *cooldowns
	next     atomic.Uint64
	now      func() time.Time
}

// cooldowns remembers which keys rest until when, by the key's SHA-256,
// across routes and policy reloads.
type cooldowns struct {
	mu    sync.Mutex
	until map[[32]byte]time.Time
}

func newCooldowns() *cooldowns { return &cooldowns{until: map[[32]byte]time.Time{}} }

// restingKeys is the process's cooldowns: every route's translate filter
// and every policy version share them, since they share the keys.
var restingKeys = newCooldowns()

// newKeyPool resolves a provider's keys; a provider configured without any
// sends none. A key that resolves empty (an unset variable, an empty file)
// refuses the policy, naming where it was to come from: sent as is, it
// would fail every request with the provider's 401.
func newKeyPool(p *policy.Provider, src filters.SecretSource, cool *cooldowns, now func() time.Time) (*keyPool, error) {
	pool := &keyPool{provider: p.Name, cool: cool, now: now}
	for _, ref := range p.Keys {
		k, err := src.Resolve(ref)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", p.Name, err)
		}
		if k == "" {
			if ref.Env != "" {
				return nil, fmt.Errorf("provider %s: api key: environment variable %s is unset or empty", p.Name, ref.Env)
			}
			return nil, fmt.Errorf("provider %s: api key: file %s is empty", p.Name, ref.File)
		}
		pool.keys = append(pool.keys, secret(k))
		pool.marks = append(pool.marks, sha256.Sum256([]byte(k)))
	}
	return pool, nil
}

// pick returns the next key that is not resting, in turn; when all rest,
// the one whose rest ends first. The index is -1 when the pool is empty.
func (p *keyPool) pick() (int, secret) {
	if len(p.keys) == 0 {
		return -1, ""
	}
	start := int(p.next.Add(1)-1) % len(p.keys)
	now := p.now()
	p.cool.mu.Lock()
	defer p.cool.mu.Unlock()
	best, bestUntil := -1, time.Time{}
	for j := range p.keys {
		i := (start + j) % len(p.keys)
		until := p.cool.until[p.marks[i]]
		if !until.After(now) {
			return i, p.keys[i]
		}
		if best < 0 || until.Before(bestUntil) {
			best, bestUntil = i, until
		}
	}
	return best, p.keys[best]
}

// rest takes key i out of turn for d.
func (p *keyPool) rest(i int, d time.Duration) {
	p.cool.mu.Lock()
	defer p.cool.mu.Unlock()
	p.cool.until[p.marks[i]] = p.now().Add(d)
}

// keyUse is which key of which pool an attempt was sent with.
type keyUse struct {
	pool  *keyPool
	index int
}

// key picks the provider key for an attempt and remembers it, so the
// attempt's outcome can rest it.
func (f *Filter) key(a *filters.Attempt) string {
	pool := f.pools[a.Target.Provider().Name]
	if pool == nil {
		return ""
	}
	i, k := pool.pick()
	if i >= 0 {
		f.used.Store(a, keyUse{pool: pool, index: i})
	}
	return string(k)
}

// AttemptDone implements [filters.AttemptDoneHook]: a key the provider
// refused (401) or rate-limited (429) rests for the retry-after the
// provider asked for, or a minute, and the next attempts use the others.
func (f *Filter) AttemptDone(ctx context.Context, _ *filters.Exchange, a *filters.Attempt) {
	v, ok := f.used.LoadAndDelete(a)
	if !ok {
		return
	}
	u := v.(keyUse)
	o := a.Outcome()
	if o.Status != http.StatusUnauthorized && o.Status != http.StatusTooManyRequests {
		return
	}
	d := retryAfter(o.Header, u.pool.now())
	u.pool.rest(u.index, d)
	f.log.LogAttrs(ctx, slog.LevelWarn, "provider key resting", slog.String("provider", u.pool.provider),
		slog.String("key", strconv.Itoa(u.index+1)+" of "+strconv.Itoa(len(u.pool.keys))),
		slog.Int("status", o.Status), slog.Duration("for", d))
}

// retryAfter reads how long a provider asked to wait: retry-after-ms, or
// retry-after in seconds or as an HTTP date; a minute when it did not say.
func retryAfter(h filters.Headers, now time.Time) time.Duration {
	d := defaultCooldown
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms > 0 {
		d = time.Duration(ms * float64(time.Millisecond))
	} else if v := h.Get("retry-after"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
			d = time.Duration(s * float64(time.Second))
		} else if t, err := http.ParseTime(v); err == nil && t.After(now) {
			d = t.Sub(now)
		}
	}
	return min(d, maxCooldown)
}

var _ filters.AttemptDoneHook = (*Filter)(nil)
