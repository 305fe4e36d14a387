package store

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is the embedded single-node store. One mutex guards all state; every
// operation is a short critical section, so it gives the same atomicity as
// the Redis scripts. State lives only as long as the process.
type Memory struct {
	clock       Clock
	retention   time.Duration
	revokedKeys time.Duration
	metrics     *Metrics

	mu       sync.Mutex
	buckets  map[string]memBucket
	windows  map[memWindowKey]memWindow
	counters map[string]*memCounter                // budget key → counters
	resv     map[string]map[string]*memReservation // tenant → request → reservation
	// live holds the reservations still active, so that lazy expiry on
	// the request path looks at requests in flight, not at every
	// reservation kept for the retention.
	live   map[string]map[string]*memReservation // tenant → request → reservation
	keys   map[string]KeyRecord                  // hash → record
	health map[string]ProviderHealth             // provider → record
	drills map[string]bool                       // provider → down
	// sketches holds each series' summaries by replica.
	sketches map[string]map[string]memSketch
	// tallies holds each tally series.
	tallies map[string]*memTallySeries
}

type memBucket struct {
	tokens  int64 // micro-tokens
	last    int64 // microseconds
	expires time.Time
}

type memWindowKey struct {
	group, name string
	start       int64
}

type memWindow struct {
	used  int64
	endMs int64
}

type memCounter struct {
	spent, reserved int64
	hourly          [24]int64
	keepUntil       time.Time
}

// memReservation mirrors the Redis reservation hash; state is one of
// stateActive, stateCommitted, stateReleased, stateExpired.
type memReservation struct {
	state    byte
	amount   int64
	expires  time.Time
	lines    []string // budget counter keys
	hour     int
	forgetAt time.Time
}

const (
	stateActive    = 'a'
	stateCommitted = 'c'
	stateReleased  = 'r'
	stateExpired   = 'x'
)

// NewMemory returns an empty in-memory store.
func NewMemory(o Options) *Memory {
	clock := o.Clock
	if clock == nil {
		clock = systemClock{}
	}
	return &Memory{
		clock:       clock,
		retention:   o.retention(),
		revokedKeys: o.revokedKeyRetention(),
		metrics:     o.Metrics,
		buckets:     map[string]memBucket{},
		windows:     map[memWindowKey]memWindow{},
		counters:    map[string]*memCounter{},
		resv:        map[string]map[string]*memReservation{},
		live:        map[string]map[string]*memReservation{},
		keys:        map[string]KeyRecord{},
		health:      map[string]ProviderHealth{},
		drills:      map[string]bool{},
	}
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// TakeTokens implements Limits.
func (m *Memory) TakeTokens(_ context.Context, b Bucket, requested int64) (BucketResult, error) {
	if err := b.check(requested); err != nil {
		return BucketResult{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.takeTokens(b, requested, m.clock.Now()), nil
}

func (m *Memory) takeTokens(b Bucket, requested int64, now time.Time) BucketResult {
	st, ok := m.buckets[b.Name]
	if !ok || !now.Before(st.expires) {
		st = memBucket{tokens: b.BurstCapacity * microTokens}
	}
	allowed, left, retry := refill(b, st.tokens, st.last, now.UnixMicro(), requested)
	m.buckets[b.Name] = memBucket{tokens: left, last: now.UnixMicro(), expires: now.Add(b.ttl())}
	return BucketResult{Allowed: allowed, Remaining: left / microTokens, RetryAfter: time.Duration(retry) * time.Microsecond}
}

// AddWindows implements Limits.
func (m *Memory) AddWindows(_ context.Context, group string, lines []WindowLine) (WindowResult, error) {
	if err := checkWindows(group, lines); err != nil {
		return WindowResult{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addWindows(group, lines, m.clock.Now().UnixMilli(), true), nil
}

// addWindows adds every line's amount if all fit; with add false it only
// reads the counters (Allowed false, Refused -1).
func (m *Memory) addWindows(group string, lines []WindowLine, nowMs int64, add bool) WindowResult {
	res := WindowResult{Allowed: add, Refused: -1, Lines: make([]WindowState, len(lines))}
	keys := make([]memWindowKey, len(lines))
	used := make([]int64, len(lines))
	for i, l := range lines {
		size := l.Size.Milliseconds()
		keys[i] = memWindowKey{group: group, name: l.Name, start: nowMs - nowMs%size}
		if w, ok := m.windows[keys[i]]; ok && nowMs < w.endMs {
			used[i] = w.used
		}
		if res.Allowed && used[i]+l.Amount > l.Limit {
			res.Allowed, res.Refused = false, i
		}
	}
	for i, l := range lines {
		if res.Allowed {
			used[i] += l.Amount
			m.windows[keys[i]] = memWindow{used: used[i], endMs: keys[i].start + l.Size.Milliseconds()}
		}
		res.Lines[i] = windowState(group, l, used[i], keys[i].start, nowMs)
	}
	return res
}

// AdjustWindow implements Limits.
func (m *Memory) AdjustWindow(_ context.Context, ref WindowRef, delta int64) (bool, error) {
	if err := ref.check(delta); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.adjustWindow(ref, delta, m.clock.Now().UnixMilli()), nil
}

func (m *Memory) adjustWindow(ref WindowRef, delta, nowMs int64) bool {
	k := memWindowKey{group: ref.Group, name: ref.Name, start: ref.startMillis()}
	w, ok := m.windows[k]
	if !ok || nowMs >= w.endMs {
		return false
	}
	w.used += delta
	m.windows[k] = w
	return true
}

// counterKey matches the tail of the Redis budget key.
func counterKey(s Scope, code string) string { return s.String() + ":" + code }

// counterKeep is how long a budget counter outlives its last write; Redis
// uses the same numbers.
func counterKeep(code string) time.Duration {
	if code[0] == 'd' {
		return 8 * 24 * time.Hour
	}
	return 93 * 24 * time.Hour
}

// Reserve implements Budgets.
func (m *Memory) Reserve(_ context.Context, id ReservationID, lines []BudgetLine, amount int64, ttl time.Duration) error {
	if err := checkReserve(id, lines, amount, ttl); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	m.metrics.expiredN(m.expireDue(id.Tenant, now))
	_, err := m.reserve(id, lines, amount, ttl, now)
	return err
}

// reserve is Reserve once due reservations are expired. It reads every
// line first and returns each one's state, granted or not.
func (m *Memory) reserve(id ReservationID, lines []BudgetLine, amount int64, ttl time.Duration, now time.Time) ([]LineState, error) {
	if m.reservation(id, now) != nil {
		return nil, ErrDuplicateReservation
	}
	hour := now.UTC().Hour()
	keys := make([]string, len(lines))
	states := make([]LineState, len(lines))
	var refusal error
	for i, l := range lines {
		keys[i] = counterKey(l.Scope, periodCode(l.Period, now))
		var c memCounter
		if cur, ok := m.counters[keys[i]]; ok && now.Before(cur.keepUntil) {
			c = *cur
		}
		states[i] = lineState(l.Limit, c.spent, c.reserved, hour, c.hourly[hour])
		if refusal == nil && c.spent+c.reserved+amount > l.Limit {
			refusal = &BudgetExceededError{Line: l, Remaining: states[i].Remaining, Requested: amount}
		}
	}
	if refusal != nil {
		return states, refusal
	}
	for i, k := range keys {
		m.counter(k, now).reserved += amount
		states[i] = lineState(lines[i].Limit, states[i].Spent, states[i].Reserved+amount, hour, states[i].HourSpent)
	}
	r := &memReservation{state: stateActive, amount: amount, expires: now.Add(ttl), lines: keys, hour: hour}
	for _, idx := range []map[string]map[string]*memReservation{m.resv, m.live} {
		if idx[id.Tenant] == nil {
			idx[id.Tenant] = map[string]*memReservation{}
		}
		idx[id.Tenant][id.Request] = r
	}
	return states, nil
}

// counter returns the live counter for key, creating it (or replacing one
// whose time is over) as needed. Like a Redis PEXPIRE on every write, each
// call extends its life.
func (m *Memory) counter(key string, now time.Time) *memCounter {
	c, ok := m.counters[key]
	if !ok || !now.Before(c.keepUntil) {
		c = &memCounter{}
		m.counters[key] = c
	}
	c.keepUntil = now.Add(counterKeep(periodOf(key)))
	return c
}

// periodOf returns the period code at the end of a counter key.
func periodOf(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == ':' {
			return key[i+1:]
		}
	}
	return key
}

// reservation returns the reservation unless it was never made or has been
// forgotten.
func (m *Memory) reservation(id ReservationID, now time.Time) *memReservation {
	r := m.resv[id.Tenant][id.Request]
	if r == nil || (r.state != stateActive && !now.Before(r.forgetAt)) {
		return nil
	}
	return r
}

// expireDue returns the amounts of the tenant's reservations past their TTL.
func (m *Memory) expireDue(tenant string, now time.Time) int {
	n := 0
	for req, r := range m.live[tenant] {
		if !now.Before(r.expires) {
			for _, k := range r.lines {
				m.counter(k, now).reserved -= r.amount
			}
			r.state, r.forgetAt = stateExpired, now.Add(m.retention)
			m.unlive(tenant, req)
			n++
		}
	}
	return n
}

// unlive drops a reservation that is no longer active from the live index.
func (m *Memory) unlive(tenant, request string) {
	delete(m.live[tenant], request)
	if len(m.live[tenant]) == 0 {
		delete(m.live, tenant)
	}
}

// settle runs Commit (spend >= 0) or Release (spend < 0).
func (m *Memory) settle(id ReservationID, spend int64, now time.Time) (Outcome, error) {
	r := m.reservation(id, now)
	if r == nil {
		return 0, ErrUnknownReservation
	}
	commit := spend >= 0
	var out Outcome
	switch {
	case r.state == stateCommitted:
		return OutcomeAlreadyCommitted, nil
	case r.state == stateReleased:
		return OutcomeAlreadyReleased, nil
	case r.state == stateExpired && !commit:
		return OutcomeAlreadyExpired, nil
	case r.state == stateExpired:
		out = OutcomeLateCommit
	case commit:
		out = OutcomeCommitted
	default:
		out = OutcomeReleased
	}
	for _, k := range r.lines {
		c := m.counter(k, now)
		if r.state == stateActive {
			c.reserved -= r.amount
		}
		if commit {
			c.spent += spend
			if periodOf(k)[0] == 'd' {
				c.hourly[r.hour] += spend
			}
		}
	}
	r.state, r.forgetAt = stateReleased, now.Add(m.retention)
	if commit {
		r.state = stateCommitted
	}
	m.unlive(id.Tenant, id.Request)
	return out, nil
}

// settleNow locks and settles at the clock's time.
func (m *Memory) settleNow(id ReservationID, spend int64) (Outcome, error) {
	if err := id.check(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.settle(id, spend, m.clock.Now())
}

// Commit implements Budgets.
func (m *Memory) Commit(_ context.Context, id ReservationID, actual int64) (Outcome, error) {
	if err := checkMoney("actual", actual); err != nil {
		return 0, err
	}
	return m.settleNow(id, actual)
}

// Release implements Budgets.
func (m *Memory) Release(_ context.Context, id ReservationID) (Outcome, error) {
	return m.settleNow(id, -1)
}

// Admit implements Requests under one lock, so it is as atomic as the
// Redis script.
func (m *Memory) Admit(_ context.Context, a Admission) (AdmissionResult, error) {
	if err := a.check(); err != nil {
		return AdmissionResult{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	var res AdmissionResult
	for _, b := range a.Buckets {
		r := m.takeTokens(b, 1, now)
		res.Buckets = append(res.Buckets, r)
		if !r.Allowed {
			res.Refused = RefusedBucket
			break
		}
	}
	if len(a.Windows) > 0 {
		res.Windows = m.addWindows(a.Group, a.Windows, now.UnixMilli(), res.Refused == Admitted)
		if res.Refused == Admitted && !res.Windows.Allowed {
			res.Refused = RefusedWindows
		}
	}
	if res.Refused == Admitted && a.reserves() {
		m.metrics.expiredN(m.expireDue(a.Tenant, now))
		if res.Lines, res.Budget = m.reserve(a.ID, a.Lines, a.Amount, a.TTL, now); res.Budget != nil {
			res.Refused = RefusedBudget
		}
	}
	if a.Provider != nil {
		res.Provider = m.addWindows(a.Provider.Group, a.Provider.Lines, now.UnixMilli(), true)
	}
	return res, nil
}

// Settle implements Requests under one lock.
func (m *Memory) Settle(_ context.Context, s Settlement) (SettleResult, error) {
	if err := s.check(); err != nil {
		return SettleResult{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	res := SettleResult{Applied: make([]bool, len(s.Windows))}
	for i, d := range s.Windows {
		res.Applied[i] = m.adjustWindow(d.Ref, d.Delta, now.UnixMilli())
	}
	if !s.settles() {
		return res, nil
	}
	var err error
	res.Outcome, err = m.settle(s.ID, s.actual(), now)
	return res, err
}

// Budget implements Budgets.
func (m *Memory) Budget(_ context.Context, line BudgetLine) (BudgetState, error) {
	if err := line.check(); err != nil {
		return BudgetState{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	m.metrics.expiredN(m.expireDue(line.Scope.Tenant, now))
	code := periodCode(line.Period, now)
	st := BudgetState{CurrentHour: now.UTC().Hour()}
	if c, ok := m.counters[counterKey(line.Scope, code)]; ok && now.Before(c.keepUntil) {
		st.Spent, st.Reserved, st.Hourly = c.spent, c.reserved, c.hourly
	}
	return finishBudget(st, line.Limit, code)
}

// finishBudget fills the fields both stores derive the same way.
func finishBudget(st BudgetState, limit int64, code string) (BudgetState, error) {
	start, err := periodStart(code)
	if err != nil {
		return BudgetState{}, err
	}
	st.PeriodStart = start
	st.Remaining = max(limit-st.Spent-st.Reserved, 0)
	return st, nil
}

// Sweep implements Budgets; it also drops buckets, windows, counters and
// reservation records whose time is over, which bounds the memory used.
func (m *Memory) Sweep(_ context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	n := 0
	for tenant, rs := range m.resv {
		n += m.expireDue(tenant, now)
		for req, r := range rs {
			if r.state != stateActive && !now.Before(r.forgetAt) {
				delete(rs, req)
			}
		}
		if len(rs) == 0 {
			delete(m.resv, tenant)
		}
	}
	for k, b := range m.buckets {
		if !now.Before(b.expires) {
			delete(m.buckets, k)
		}
	}
	nowMs := now.UnixMilli()
	for k, w := range m.windows {
		if nowMs >= w.endMs {
			delete(m.windows, k)
		}
	}
	for k, c := range m.counters {
		if !now.Before(c.keepUntil) && c.reserved == 0 {
			delete(m.counters, k)
		}
	}
	for hash := range m.keys {
		m.liveKey(hash) // deletes a record revoked longer ago than the retention
	}
	m.metrics.expiredN(n)
	return n, nil
}

// PutKey implements KeyRing.
func (m *Memory) PutKey(_ context.Context, rec KeyRecord) error {
	if err := rec.check(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, _ := m.liveKey(rec.Hash)
	rec = rec.normalised()
	rec.Revoked, rec.RevokedAt = old.Revoked, old.RevokedAt
	m.keys[rec.Hash] = rec
	return nil
}

// Key implements KeyRing.
func (m *Memory) Key(_ context.Context, hash string) (KeyRecord, error) {
	if err := checkHash(hash); err != nil {
		return KeyRecord{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.liveKey(hash)
	if !ok {
		return KeyRecord{}, ErrNotFound
	}
	rec.Models, rec.Tags = slices.Clone(rec.Models), maps.Clone(rec.Tags)
	return rec, nil
}

// liveKey returns the record of hash unless there is none or it was
// revoked longer ago than the retention, in which case it is deleted, as
// Redis's expiry deletes it. Call with m.mu held.
func (m *Memory) liveKey(hash string) (KeyRecord, bool) {
	rec, ok := m.keys[hash]
	if ok && rec.Revoked && !m.clock.Now().Before(rec.RevokedAt.Add(m.revokedKeys)) {
		delete(m.keys, hash)
		return KeyRecord{}, false
	}
	return rec, ok
}

// TenantKeys implements KeyRing.
func (m *Memory) TenantKeys(_ context.Context, tenant string) ([]KeyRecord, error) {
	if err := checkSegment("tenant", tenant); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []KeyRecord
	for hash, rec := range m.keys {
		if rec.Tenant == tenant {
			if _, ok := m.liveKey(hash); !ok {
				continue
			}
			rec.Models, rec.Tags = slices.Clone(rec.Models), maps.Clone(rec.Tags)
			out = append(out, rec)
		}
	}
	sortKeys(out)
	return out, nil
}

// sortKeys orders records oldest first, then by name and hash.
func sortKeys(recs []KeyRecord) {
	slices.SortFunc(recs, func(a, b KeyRecord) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Hash, b.Hash))
	})
}

// RevokeKey implements KeyRing.
func (m *Memory) RevokeKey(_ context.Context, hash string) error {
	if err := checkHash(hash); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.liveKey(hash)
	if !ok {
		return ErrNotFound
	}
	if !rec.Revoked {
		rec.Revoked, rec.RevokedAt = true, microTime(m.clock.Now())
		m.keys[hash] = rec
	}
	return nil
}

// microTime truncates to the microsecond precision Redis returns.
func microTime(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }

// SetHealth implements HealthBoard.
func (m *Memory) SetHealth(_ context.Context, provider, state string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.health[provider] = ProviderHealth{Provider: provider, State: state, Updated: microTime(m.clock.Now())}
	return nil
}

// Health implements HealthBoard.
func (m *Memory) Health(_ context.Context, provider string) (ProviderHealth, error) {
	if err := checkProvider(provider); err != nil {
		return ProviderHealth{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.health[provider]
	if !ok {
		return ProviderHealth{}, ErrNotFound
	}
	return h, nil
}

// Healths implements HealthBoard.
func (m *Memory) Healths(_ context.Context) ([]ProviderHealth, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ProviderHealth, 0, len(m.health))
	for _, h := range m.health {
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b ProviderHealth) int { return strings.Compare(a.Provider, b.Provider) })
	return out, nil
}

// SetDrill implements HealthBoard.
func (m *Memory) SetDrill(_ context.Context, provider string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drills[provider] = true
	return nil
}

// ClearDrill implements HealthBoard.
func (m *Memory) ClearDrill(_ context.Context, provider string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.drills, provider)
	return nil
}

// Drills implements HealthBoard.
func (m *Memory) Drills(_ context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.drills))
	for p := range m.drills {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

var _ Store = (*Memory)(nil)
