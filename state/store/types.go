package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"
	"unicode"
)

// Bucket is a token bucket shared by every caller that names it.
type Bucket struct {
	Name          string  // e.g. "tenant:acme/key:web"; braces and spaces are refused
	ReplenishRate float64 // tokens added per second, > 0
	BurstCapacity int64   // tokens the bucket holds; 0 refuses every call
}

// BucketResult is TakeTokens' answer.
type BucketResult struct {
	Allowed   bool
	Remaining int64 // whole tokens left after this call
	// RetryAfter is how long until the refused request would fit. It is zero
	// when allowed, and also when requested exceeds the burst capacity so that
	// no wait helps.
	RetryAfter time.Duration
}

// WindowLine is one fixed-window counter in an AddWindows call. Windows are
// aligned to the Unix epoch, so a one-minute window starts on the minute.
type WindowLine struct {
	Name   string        // unique within the group, e.g. "rpm" or "key:web/tpm"
	Limit  int64         // most the window may count
	Size   time.Duration // window length, whole milliseconds
	Amount int64         // what this call adds: 1 for a request, the token estimate for tokens
}

// WindowResult is AddWindows' answer.
type WindowResult struct {
	Allowed bool
	Refused int // index of the first line that did not fit, -1 when allowed
	Lines   []WindowState
}

// WindowState describes one counter after an AddWindows call.
type WindowState struct {
	Limit     int64
	Used      int64 // after this call; unchanged when refused
	Remaining int64 // Limit - Used, never below 0
	// ResetIn is how long until the window ends, measured by the store's
	// clock so that skewed replicas agree.
	ResetIn time.Duration
	Ref     WindowRef // for AdjustWindow once the real amount is known
}

// WindowRef names one window of one counter.
type WindowRef struct {
	Group string
	Name  string
	Start time.Time // window start, UTC, millisecond precision
	Size  time.Duration
}

func (r WindowRef) startMillis() int64 { return r.Start.UnixMilli() }

func (r WindowRef) endMillis() int64 { return r.startMillis() + r.Size.Milliseconds() }

// Period is a budget period, with UTC boundaries.
type Period uint8

// Budget periods.
const (
	Daily Period = iota + 1
	Monthly
)

// String returns "daily" or "monthly".
func (p Period) String() string {
	switch p {
	case Daily:
		return "daily"
	case Monthly:
		return "monthly"
	}
	return "unknown"
}

// code is the one-letter period kind used in keys and scripts.
func (p Period) code() string {
	if p == Daily {
		return "d"
	}
	return "m"
}

// periodCode names the period that contains t: dYYYYMMDD or mYYYYMM.
func periodCode(p Period, t time.Time) string {
	t = t.UTC()
	if p == Daily {
		return "d" + t.Format("20060102")
	}
	return "m" + t.Format("200601")
}

// periodStart is the inverse of periodCode.
func periodStart(code string) (time.Time, error) {
	if len(code) < 2 {
		return time.Time{}, fmt.Errorf("bad period code %q", code)
	}
	layout := "200601"
	if code[0] == 'd' {
		layout = "20060102"
	}
	return time.Parse(layout, code[1:])
}

// Scope is who a budget belongs to: a tenant, or an app or key inside it. A
// scope always names its tenant so that all of a tenant's budgets and
// reservations share one Redis Cluster slot.
type Scope struct {
	Tenant string
	App    string // optional
	Key    string // optional: the key's name, never the key
	// Tag is optional: the tenant's requests carrying one tag, named as
	// the caller's quota names it.
	Tag string
}

// String renders "tenant:acme", "tenant:acme/app:web", "tenant:acme/key:k1"
// or "tenant:acme/tag:team=search".
func (s Scope) String() string {
	var b strings.Builder
	b.WriteString("tenant:" + s.Tenant)
	if s.App != "" {
		b.WriteString("/app:" + s.App)
	}
	if s.Key != "" {
		b.WriteString("/key:" + s.Key)
	}
	if s.Tag != "" {
		b.WriteString("/tag:" + s.Tag)
	}
	return b.String()
}

// BudgetLine is one budget a reservation must fit in.
type BudgetLine struct {
	Scope  Scope
	Period Period
	Limit  int64 // micro-USD per period
}

// BudgetState is one budget's current period.
type BudgetState struct {
	PeriodStart time.Time // UTC midnight, or the first of the month
	Spent       int64     // micro-USD committed
	Reserved    int64     // micro-USD held by live reservations
	Remaining   int64     // Limit - Spent - Reserved, never below 0
	// Hourly is the spend of each UTC hour of the day, for Daily lines; spend
	// counts in the hour its reservation was made.
	Hourly      [24]int64
	CurrentHour int // the store's current UTC hour, an index into Hourly
}

// ReservationID names a reservation. Tenant places it with the tenant's
// budgets (one Redis Cluster slot); Request is unique per attempt, such as the
// request ID plus the attempt number.
type ReservationID struct {
	Tenant  string
	Request string
}

// KeyRecord is a virtual key issued at runtime. Only the key's SHA-256 is
// stored; see HashKey.
type KeyRecord struct {
	Hash   string // lowercase hex SHA-256 of the key
	Name   string
	Tenant string
	App    string   // optional: the one app the key may act as
	Models []string // allowlist; empty means the tenant's models
	Limits KeyLimits
	// Tags are the key's requests' tags where they set none of that key.
	Tags    map[string]string
	Created time.Time
	// Revoked and RevokedAt are set by RevokeKey; PutKey ignores them.
	Revoked   bool
	RevokedAt time.Time
}

// KeyLimits are a key's own limits; zero means the tenant's apply.
type KeyLimits struct {
	ReplenishRate     float64 `json:"replenish_rate,omitempty"`
	BurstCapacity     int64   `json:"burst_capacity,omitempty"`
	RequestsPerMinute int64   `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int64   `json:"tokens_per_minute,omitempty"`
	DailyBudget       int64   `json:"daily_budget,omitempty"` // micro-USD
	MonthlyBudget     int64   `json:"monthly_budget,omitempty"`
	MaxCostPerRequest int64   `json:"max_cost_per_request,omitempty"`
}

// HashKey returns the lowercase hex SHA-256 of a plaintext virtual key, the
// only form in which a key is stored or compared.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// ProviderHealth is the shared health record of one provider.
type ProviderHealth struct {
	Provider string
	State    string
	Updated  time.Time // the store's time at SetHealth, microsecond precision
}

// maxExact is the largest integer that Redis Lua numbers (doubles) hold
// exactly; amounts, limits and micro-tokens stay below it.
const maxExact = 1<<53 - 1

// maxReservationTTL keeps every reservation far shorter than the life of the
// budget counters it holds (8 days for a daily counter).
const maxReservationTTL = 24 * time.Hour

// maxName bounds every name that becomes part of a key.
const maxName = 200

// checkName accepts names that may sit inside a Redis key: no braces (they
// would move the hash tag), no spaces or control characters.
func checkName(kind, s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s", ErrInvalid, kind)
	}
	if len(s) > maxName {
		return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, kind, maxName)
	}
	if strings.IndexFunc(s, func(r rune) bool { return r == '{' || r == '}' || unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("%w: %s %q has a brace, space or control character", ErrInvalid, kind, s)
	}
	return nil
}

// checkSegment also refuses the separators of Scope.String, which must stay
// unambiguous.
func checkSegment(kind, s string) error {
	if err := checkName(kind, s); err != nil {
		return err
	}
	if strings.ContainsAny(s, ":/") {
		return fmt.Errorf("%w: %s %q has ':' or '/'", ErrInvalid, kind, s)
	}
	return nil
}

func (s Scope) check() error {
	if err := checkSegment("tenant", s.Tenant); err != nil {
		return err
	}
	if s.App != "" {
		if err := checkSegment("app", s.App); err != nil {
			return err
		}
	}
	if s.Key != "" {
		if err := checkSegment("key name", s.Key); err != nil {
			return err
		}
	}
	if s.Tag != "" {
		return checkSegment("tag", s.Tag)
	}
	return nil
}

func (l BudgetLine) check() error {
	if err := l.Scope.check(); err != nil {
		return err
	}
	if l.Period != Daily && l.Period != Monthly {
		return fmt.Errorf("%w: budget period %d", ErrInvalid, l.Period)
	}
	return checkMoney("limit", l.Limit)
}

func checkMoney(kind string, v int64) error {
	if v < 0 || v > maxExact {
		return fmt.Errorf("%w: %s %d out of range", ErrInvalid, kind, v)
	}
	return nil
}

func (id ReservationID) check() error {
	if err := checkSegment("tenant", id.Tenant); err != nil {
		return err
	}
	return checkName("reservation request", id.Request)
}

func checkReserve(id ReservationID, lines []BudgetLine, amount int64, ttl time.Duration) error {
	if err := id.check(); err != nil {
		return err
	}
	if len(lines) == 0 {
		return fmt.Errorf("%w: no budget lines", ErrInvalid)
	}
	seen := make(map[string]bool, len(lines))
	for _, l := range lines {
		if err := l.check(); err != nil {
			return err
		}
		if l.Scope.Tenant != id.Tenant {
			return fmt.Errorf("%w: line %s is outside tenant %s", ErrInvalid, l.Scope, id.Tenant)
		}
		k := l.Scope.String() + " " + l.Period.String()
		if seen[k] {
			return fmt.Errorf("%w: line %s listed twice", ErrInvalid, k)
		}
		seen[k] = true
	}
	if ttl < time.Millisecond || ttl > maxReservationTTL {
		return fmt.Errorf("%w: reservation ttl %s outside 1ms..%s", ErrInvalid, ttl, maxReservationTTL)
	}
	return checkMoney("amount", amount)
}

const microTokens = 1_000_000

func (b Bucket) check(requested int64) error {
	if err := checkName("bucket", b.Name); err != nil {
		return err
	}
	if !(b.ReplenishRate > 0) || math.IsInf(b.ReplenishRate, 0) {
		return fmt.Errorf("%w: bucket %s replenish rate must be > 0", ErrInvalid, b.Name)
	}
	if b.BurstCapacity < 0 || b.BurstCapacity > maxExact/microTokens {
		return fmt.Errorf("%w: bucket %s burst capacity out of range", ErrInvalid, b.Name)
	}
	if requested < 1 || requested > maxExact/microTokens {
		return fmt.Errorf("%w: bucket %s requested tokens out of range", ErrInvalid, b.Name)
	}
	return nil
}

// ttl is how long an idle bucket is kept: twice its fill time, as in Spring
// Cloud Gateway, but at least a second. A bucket that expired is full, which
// is what refilling would have made it anyway.
func (b Bucket) ttl() time.Duration {
	ms := math.Ceil(2 * float64(b.BurstCapacity) / b.ReplenishRate * 1000)
	if ms < 1000 || math.IsNaN(ms) {
		ms = 1000
	}
	if ms > float64(maxExact) {
		ms = maxExact
	}
	return time.Duration(ms) * time.Millisecond
}

// refill is the one token-bucket step both stores run, in micro-tokens and
// microseconds, with the same float64 operations as the Lua script so that
// both give identical answers.
func refill(b Bucket, tokens, last, now, requested int64) (allowed bool, left, retryMicros int64) {
	capacity := float64(b.BurstCapacity * microTokens)
	want := requested * microTokens
	delta := max(now-last, 0)
	filled := int64(math.Min(capacity, float64(tokens)+math.Floor(float64(delta)*b.ReplenishRate)))
	if filled >= want {
		return true, filled - want, 0
	}
	if want > b.BurstCapacity*microTokens {
		return false, filled, 0
	}
	return false, filled, int64(math.Ceil(float64(want-filled) / b.ReplenishRate))
}

func checkWindows(group string, lines []WindowLine) error {
	if err := checkName("window group", group); err != nil {
		return err
	}
	if len(lines) == 0 {
		return fmt.Errorf("%w: no window lines", ErrInvalid)
	}
	seen := make(map[string]bool, len(lines))
	for _, l := range lines {
		if err := checkName("window", l.Name); err != nil {
			return err
		}
		if seen[l.Name] {
			return fmt.Errorf("%w: window %s listed twice", ErrInvalid, l.Name)
		}
		seen[l.Name] = true
		if l.Size < time.Millisecond || l.Size%time.Millisecond != 0 {
			return fmt.Errorf("%w: window %s size must be whole milliseconds", ErrInvalid, l.Name)
		}
		if l.Limit < 0 || l.Limit > maxExact || l.Amount < 0 || l.Amount > maxExact {
			return fmt.Errorf("%w: window %s limit or amount out of range", ErrInvalid, l.Name)
		}
	}
	return nil
}

func (r WindowRef) check(delta int64) error {
	if err := checkName("window group", r.Group); err != nil {
		return err
	}
	if err := checkName("window", r.Name); err != nil {
		return err
	}
	if r.Size < time.Millisecond || r.Size%time.Millisecond != 0 {
		return fmt.Errorf("%w: window %s size must be whole milliseconds", ErrInvalid, r.Name)
	}
	if delta < -maxExact || delta > maxExact {
		return fmt.Errorf("%w: window %s delta out of range", ErrInvalid, r.Name)
	}
	return nil
}

// windowState fills one WindowState from the counter after the call.
func windowState(group string, l WindowLine, used, startMs, nowMs int64) WindowState {
	sizeMs := l.Size.Milliseconds()
	return WindowState{
		Limit:     l.Limit,
		Used:      used,
		Remaining: max(l.Limit-used, 0),
		ResetIn:   time.Duration(startMs+sizeMs-nowMs) * time.Millisecond,
		Ref:       WindowRef{Group: group, Name: l.Name, Start: time.UnixMilli(startMs).UTC(), Size: l.Size},
	}
}

func checkHash(hash string) error {
	if len(hash) != sha256.Size*2 {
		return fmt.Errorf("%w: key hash must be %d lowercase hex digits", ErrInvalid, sha256.Size*2)
	}
	for _, c := range hash {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%w: key hash must be %d lowercase hex digits", ErrInvalid, sha256.Size*2)
		}
	}
	return nil
}

func (r KeyRecord) check() error {
	if err := checkHash(r.Hash); err != nil {
		return err
	}
	if err := checkSegment("tenant", r.Tenant); err != nil {
		return err
	}
	if r.App != "" {
		if err := checkSegment("app", r.App); err != nil {
			return err
		}
	}
	if r.Name == "" {
		return fmt.Errorf("%w: key record without a name", ErrInvalid)
	}
	if r.Created.IsZero() {
		return fmt.Errorf("%w: key record %s without a creation time", ErrInvalid, r.Name)
	}
	return nil
}

// normalised is the record as stored: UTC time, no revocation, own slice.
func (r KeyRecord) normalised() KeyRecord {
	r.Created = r.Created.UTC()
	r.Models = append([]string(nil), r.Models...)
	r.Tags = maps.Clone(r.Tags)
	r.Revoked, r.RevokedAt = false, time.Time{}
	return r
}

func checkProvider(p string) error { return checkName("provider", p) }
