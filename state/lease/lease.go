package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/state/store"
)

// Options tunes the leases. The zero value is the production default.
type Options struct {
	// Spool keeps the commit of a lease the store could not take, for
	// replay; nil: the commit is retried every Tick until it lands.
	Spool *store.Spooler
	// Metrics counts admissions and store calls; nil counts nothing.
	Metrics *Metrics
	// Log reports commits that failed; nil discards.
	Log *slog.Logger
	// Tick is how often settlements are flushed and idle leases retired.
	// Default 250ms.
	Tick time.Duration
	// MaxAge is how long a budget lease lends before it is replaced: the
	// delay before another replica sees spend. Default 1s.
	MaxAge time.Duration
	// Idle is how long a lease may go unused before it is retired: a
	// budget lease's room and a window lease's counts go back to the
	// store, a bucket lease's tokens lapse. Default 3s.
	Idle time.Duration
	// Batch is the most requests one lease is sized for. Default 256.
	Batch int64
	// Share: a lease takes at most 1/Share of what is left of a limit.
	// Default 8.
	Share int64
	// MinRequests: a lease smaller than this many requests' worth is not
	// taken; requests are then admitted by the store one by one. Default 4.
	MinRequests int64
	// Now is the clock; nil: time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Tick <= 0 {
		o.Tick = 250 * time.Millisecond
	}
	if o.MaxAge <= 0 {
		o.MaxAge = time.Second
	}
	if o.Idle <= 0 {
		o.Idle = 3 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if o.Share <= 0 {
		o.Share = 8
	}
	if o.MinRequests <= 0 {
		o.MinRequests = 4
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// callTimeout bounds each background store call.
const callTimeout = 5 * time.Second

// Store answers admissions and settlements from leases and passes every
// other call to the store it wraps.
type Store struct {
	store.Store
	o       Options
	replica string
	seq     atomic.Uint64

	mu       sync.Mutex
	budgets  map[string]*budgetSet
	buckets  map[string]*bucketLease
	windows  map[string]*windowLease
	holds    map[store.ReservationID]*hold
	retiring []*budgetLease // closed: committed once their requests settle
	deltas   map[store.WindowRef]int64
	closed   bool
	bg       sync.WaitGroup // lease takes under way
	// flushing serializes flushes, so Close returns only once what an
	// earlier Tick's flush took has been written too.
	flushing sync.Mutex
}

// New wraps inner.
func New(inner store.Store, o Options) *Store {
	o.defaults()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &Store{
		Store: inner, o: o, replica: hex.EncodeToString(b[:]),
		budgets: map[string]*budgetSet{}, buckets: map[string]*bucketLease{}, windows: map[string]*windowLease{},
		holds: map[store.ReservationID]*hold{}, deltas: map[store.WindowRef]int64{},
	}
}

// budgetSet is the leases of one set of budget lines (the lines one kind
// of request reserves on together).
type budgetSet struct {
	key     string
	tenant  string
	lines   []store.BudgetLine
	ttl     time.Duration
	open    []*budgetLease
	loading bool
	// states is each line's state as the last store call saw it, for the
	// cost governor and for sizing the next lease.
	states []store.LineState
	// amount is the last request's reservation: leases are sized in it.
	amount int64
}

// budgetLease is one reservation in the store that requests reserve in.
type budgetLease struct {
	set         *budgetSet
	id          store.ReservationID
	amount      int64 // reserved in the store
	held, spent int64 // by requests in flight; committed by settled ones
	inflight    int
	open        bool
	taken, used time.Time
	ids         []store.ReservationID
}

func (l *budgetLease) room() int64 { return l.amount - l.held - l.spent }

// hold is one request's reservation inside a lease.
type hold struct {
	lease   *budgetLease
	amount  int64
	outcome store.Outcome // 0 while in flight
}

// bucketLease is tokens taken from one bucket.
type bucketLease struct {
	b         store.Bucket
	tokens    int64
	expires   time.Time
	remaining int64 // the bucket's level after the last take
	n         int64 // tokens the last take asked for
	used      int64 // tokens spent since the last take
	loading   bool
	last      time.Time
}

// windowLease is counts taken in one window of a group's lines.
type windowLease struct {
	group   string
	lines   []store.WindowLine // Amount is the last take's
	left    []int64
	states  []store.WindowState // after the last take
	ends    time.Time           // local time the window ends
	loading bool
	last    time.Time
}

// The keys below are built on every admission: appends, not fmt.

func bucketKey(b store.Bucket) string {
	k := make([]byte, 0, len(b.Name)+32)
	k = append(k, b.Name...)
	k = strconv.AppendFloat(append(k, 0), b.ReplenishRate, 'g', -1, 64)
	k = strconv.AppendInt(append(k, 0), b.BurstCapacity, 10)
	return string(k)
}

func windowKey(group string, lines []store.WindowLine) string {
	k := make([]byte, 0, len(group)+len(lines)*40)
	k = append(k, group...)
	for _, l := range lines {
		k = append(append(k, 0), l.Name...)
		k = strconv.AppendInt(append(k, 0), l.Limit, 10)
		k = strconv.AppendInt(append(k, 0), int64(l.Size), 10)
	}
	return string(k)
}

func budgetKey(tenant string, lines []store.BudgetLine) string {
	k := make([]byte, 0, len(tenant)+len(lines)*48)
	k = append(k, tenant...)
	for _, l := range lines {
		k = append(append(k, 0), l.Scope.Tenant...)
		k = append(append(k, 0), l.Scope.App...)
		k = append(append(k, 0), l.Scope.Key...)
		k = append(append(k, 0), l.Scope.Tag...)
		k = strconv.AppendInt(append(k, 0), int64(l.Period), 10)
		k = strconv.AppendInt(append(k, 0), l.Limit, 10)
	}
	return string(k)
}

// Admit implements [store.Requests]: from leases when every part of the
// admission fits what this replica holds, else by the store (which is
// exact, and answers every refusal), after which leases are taken in the
// background for the next requests.
func (s *Store) Admit(ctx context.Context, a store.Admission) (store.AdmissionResult, error) {
	now := s.o.Now()
	s.mu.Lock()
	res, ok := s.admitLocal(a, now)
	s.mu.Unlock()
	if ok {
		s.o.Metrics.admitted(true)
		return res, nil
	}
	s.o.Metrics.admitted(false)
	s.o.Metrics.call("request")
	res, err := s.Store.Admit(ctx, a)
	if err == nil && res.Refused == store.Admitted {
		s.learn(a, res, now)
	}
	return res, err
}

// admitLocal serves a from leases, all or nothing. Called with mu held.
func (s *Store) admitLocal(a store.Admission, now time.Time) (store.AdmissionResult, bool) {
	var res store.AdmissionResult
	if s.closed {
		return res, false
	}
	bl := make([]*bucketLease, len(a.Buckets))
	for i, b := range a.Buckets {
		l := s.buckets[bucketKey(b)]
		if l == nil || l.tokens < 1 || !now.Before(l.expires) {
			return res, false
		}
		bl[i] = l
	}
	var wl, pl *windowLease
	if len(a.Windows) > 0 {
		if wl = s.window(a.Group, a.Windows, now); wl == nil {
			return res, false
		}
	}
	if a.Provider != nil {
		if pl = s.window(a.Provider.Group, a.Provider.Lines, now); pl == nil {
			return res, false
		}
	}
	var set *budgetSet
	var bu *budgetLease
	if len(a.Lines) > 0 {
		if _, dup := s.holds[a.ID]; dup {
			return res, false
		}
		if set = s.budgets[budgetKey(a.Tenant, a.Lines)]; set == nil {
			return res, false
		}
		if bu = set.pick(a.Amount); bu == nil {
			set.closeBelow(a.Amount, s)
			return res, false
		}
	}

	res.Buckets = make([]store.BucketResult, len(bl))
	for i, l := range bl {
		l.tokens--
		l.used++
		l.last = now
		res.Buckets[i] = store.BucketResult{Allowed: true, Remaining: l.remaining + l.tokens}
		if l.tokens*2 < l.n && !l.loading {
			l.loading = true
			s.bg.Go(func() { s.takeTokens(l) })
		}
	}
	if wl != nil {
		res.Windows = s.spendWindow(wl, a.Windows, now)
	}
	if pl != nil {
		res.Provider = s.spendWindow(pl, a.Provider.Lines, now)
	}
	if bu != nil {
		bu.held += a.Amount
		bu.inflight++
		bu.used = now
		bu.ids = append(bu.ids, a.ID)
		s.holds[a.ID] = &hold{lease: bu, amount: a.Amount}
		set.amount = a.Amount
		res.Lines = append([]store.LineState(nil), set.states...)
		if set.room()*2 < set.lastAmount() && !set.loading {
			set.loading = true
			s.bg.Go(func() { s.takeBudget(set) })
		}
	}
	return res, true
}

// size is how many tokens the next take asks for: twice the last while
// demand outruns the lease, else twice what was spent since the last.
func (l *bucketLease) size(o Options, now time.Time) int64 {
	if now.Before(l.expires) {
		return min(o.Batch, max(o.MinRequests, 2*l.n))
	}
	return min(o.Batch, max(o.MinRequests, 2*l.used))
}

// window is the lease of group's lines when it still covers every line's
// amount in a window that has not ended. A lease that falls short gives
// back what it has left and is dropped, so that near a limit the store
// holds only what requests use. Called with mu held.
func (s *Store) window(group string, lines []store.WindowLine, now time.Time) *windowLease {
	k := windowKey(group, lines)
	l := s.windows[k]
	if l == nil || l.left == nil {
		return nil
	}
	if !now.Before(l.ends) {
		delete(s.windows, k)
		return nil
	}
	for i, ln := range lines {
		if l.left[i] < ln.Amount {
			if !l.loading {
				s.giveBackWindow(l)
				delete(s.windows, k)
			}
			return nil
		}
	}
	return l
}

func (s *Store) spendWindow(l *windowLease, lines []store.WindowLine, now time.Time) store.WindowResult {
	res := store.WindowResult{Allowed: true, Refused: -1, Lines: make([]store.WindowState, len(lines))}
	short := false
	for i, ln := range lines {
		l.left[i] -= ln.Amount
		st := l.states[i]
		st.Used -= l.left[i] // the store counts the lease whole; this is what is spent of it
		st.Remaining = max(st.Limit-st.Used, 0)
		st.ResetIn = max(l.ends.Sub(now), 0)
		res.Lines[i] = st
		if l.left[i]*2 < l.lines[i].Amount {
			short = true
		}
	}
	l.last = now
	if short && !l.loading {
		l.loading = true
		s.bg.Go(func() { s.takeWindow(l, lines) })
	}
	return res
}

// giveBackWindow queues the unspent counts of a window lease for the
// store. Called with mu held.
func (s *Store) giveBackWindow(l *windowLease) {
	for i, left := range l.left {
		if left > 0 {
			s.deltas[l.states[i].Ref] -= left
		}
		l.left[i] = 0
	}
}

// pick is the first open lease with room for amount.
func (set *budgetSet) pick(amount int64) *budgetLease {
	for _, l := range set.open {
		if l.room() >= amount {
			return l
		}
	}
	return nil
}

// closeBelow closes the leases too small for amount: they retire once
// their requests settle, so their room goes back to the store. Called
// with mu held.
func (set *budgetSet) closeBelow(amount int64, s *Store) {
	keep := set.open[:0]
	for _, l := range set.open {
		if l.room() < amount {
			l.open = false
			s.retiring = append(s.retiring, l)
			continue
		}
		keep = append(keep, l)
	}
	set.open = keep
}

func (set *budgetSet) room() int64 {
	var r int64
	for _, l := range set.open {
		r += l.room()
	}
	return r
}

func (set *budgetSet) lastAmount() int64 {
	if n := len(set.open); n > 0 {
		return set.open[n-1].amount
	}
	return 0
}

// learn starts the leases an admission the store made shows room for.
func (s *Store) learn(a store.Admission, res store.AdmissionResult, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for i, b := range a.Buckets {
		k := bucketKey(b)
		l := s.buckets[k]
		if l == nil {
			l = &bucketLease{b: b, last: now}
			s.buckets[k] = l
		}
		l.remaining = res.Buckets[i].Remaining
		l.used++
		if !l.loading {
			l.loading = true
			s.bg.Go(func() { s.takeTokens(l) })
		}
	}
	if len(a.Windows) > 0 {
		s.learnWindow(a.Group, a.Windows, res.Windows, now)
	}
	if a.Provider != nil && res.ProviderErr == nil && res.Provider.Allowed {
		s.learnWindow(a.Provider.Group, a.Provider.Lines, res.Provider, now)
	}
	if len(a.Lines) > 0 {
		k := budgetKey(a.Tenant, a.Lines)
		set := s.budgets[k]
		if set == nil {
			set = &budgetSet{key: k, tenant: a.Tenant, lines: a.Lines, ttl: a.TTL}
			s.budgets[k] = set
		}
		set.states = res.Lines
		set.amount = a.Amount
		if !set.loading {
			set.loading = true
			s.bg.Go(func() { s.takeBudget(set) })
		}
	}
}

func (s *Store) learnWindow(group string, lines []store.WindowLine, res store.WindowResult, now time.Time) {
	k := windowKey(group, lines)
	l := s.windows[k]
	if l == nil {
		l = &windowLease{group: group, lines: append([]store.WindowLine(nil), lines...), last: now}
		s.windows[k] = l
	}
	if len(res.Lines) == len(lines) {
		l.states = append(l.states[:0], res.Lines...)
	}
	if !l.loading {
		l.loading = true
		s.bg.Go(func() { s.takeWindow(l, lines) })
	}
}

// takeBudget reserves a new lease for set: Batch requests' worth, at
// most 1/Share of the tightest line's remaining, and none when that is
// less than MinRequests requests' worth.
func (s *Store) takeBudget(set *budgetSet) {
	s.mu.Lock()
	left := int64(-1)
	for _, st := range set.states {
		if left < 0 || st.Remaining < left {
			left = st.Remaining
		}
	}
	amount := set.amount
	size := min(s.o.Batch*amount, left/s.o.Share)
	lines, tenant, ttl := set.lines, set.tenant, set.ttl
	s.mu.Unlock()

	var (
		res store.AdmissionResult
		err error
		id  store.ReservationID
	)
	if amount > 0 && size >= s.o.MinRequests*amount {
		id = store.ReservationID{Tenant: tenant, Request: "lease." + s.replica + "." + strconv.FormatUint(s.seq.Add(1), 10)}
		s.background(func(ctx context.Context) {
			res, err = s.Store.Admit(ctx, store.Admission{Tenant: tenant, ID: id, Lines: lines, Amount: size, TTL: ttl})
		})
		if err != nil {
			// It may have landed: give it back rather than wait for its TTL.
			s.releaseLost(id)
		}
	}
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	set.loading = false
	if len(res.Lines) == len(lines) {
		set.states = res.Lines
	}
	if id == (store.ReservationID{}) || err != nil || res.Refused != store.Admitted || res.Budget != nil {
		if s.budgets[set.key] == set && len(set.open) == 0 {
			delete(s.budgets, set.key)
		}
		return
	}
	s.o.Metrics.lease("taken")
	l := &budgetLease{set: set, id: id, amount: size, open: true, taken: now, used: now}
	if s.closed || s.budgets[set.key] != set {
		// Closed, or retired while this lease was on its way.
		l.open = false
		s.retiring = append(s.retiring, l)
		return
	}
	// The new lease replaces those past their age.
	keep := set.open[:0]
	for _, o := range set.open {
		if now.Sub(o.taken) >= s.o.MaxAge {
			o.open = false
			s.retiring = append(s.retiring, o)
			continue
		}
		keep = append(keep, o)
	}
	set.open = append(keep, l)
}

// releaseLost queues the release of a lease whose take failed in a way
// that may have reached the store (a timeout): retired like an unused
// lease, tried again every Tick while the store is unreachable.
func (s *Store) releaseLost(id store.ReservationID) {
	s.mu.Lock()
	s.retiring = append(s.retiring, &budgetLease{id: id})
	s.mu.Unlock()
}

// background makes one store call off the request path, bounded in time.
func (s *Store) background(call func(context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	call(ctx)
	s.o.Metrics.call("background")
}

// takeTokens takes tokens from a bucket for the requests to come.
func (s *Store) takeTokens(l *bucketLease) {
	s.mu.Lock()
	n := min(l.size(s.o, s.o.Now()), l.remaining/s.o.Share)
	b := l.b
	s.mu.Unlock()
	var (
		r   store.BucketResult
		err error
	)
	if n >= s.o.MinRequests {
		s.background(func(ctx context.Context) { r, err = s.Store.TakeTokens(ctx, b, n) })
	}
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	l.loading = false
	if n < s.o.MinRequests || err != nil {
		return
	}
	l.remaining = r.Remaining
	if !r.Allowed || s.closed {
		return
	}
	if !now.Before(l.expires) {
		l.tokens = 0
	}
	l.tokens += n
	l.n, l.used = n, 0
	l.expires = now.Add(s.o.Idle)
}

// takeWindow adds counts to a window lease: for each line Batch requests'
// worth of its amount, at most 1/Share of what the window has left.
func (s *Store) takeWindow(l *windowLease, lines []store.WindowLine) {
	s.mu.Lock()
	take := make([]store.WindowLine, len(lines))
	ok := len(l.states) == len(lines)
	for i, ln := range lines {
		take[i] = ln
		if !ok {
			break
		}
		take[i].Amount = min(s.o.Batch*ln.Amount, l.states[i].Remaining/s.o.Share)
		if take[i].Amount < s.o.MinRequests*ln.Amount {
			ok = false
		}
	}
	group := l.group
	s.mu.Unlock()
	var (
		res store.WindowResult
		err error
	)
	if ok {
		s.background(func(ctx context.Context) { res, err = s.Store.AddWindows(ctx, group, take) })
	}
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	l.loading = false
	if !ok || err != nil || len(res.Lines) != len(take) {
		return
	}
	l.states = append(l.states[:0], res.Lines...)
	if !res.Allowed {
		return
	}
	k := windowKey(group, lines)
	if s.closed || s.windows[k] != l {
		for i, st := range res.Lines {
			s.deltas[st.Ref] -= take[i].Amount
		}
		return
	}
	same := l.left != nil && now.Before(l.ends)
	for i, st := range res.Lines {
		if same && st.Ref != l.statesRef(i) {
			same = false
		}
	}
	if !same {
		l.left = make([]int64, len(take))
	}
	ends := now.Add(res.Lines[0].ResetIn)
	for i, st := range res.Lines {
		l.left[i] += take[i].Amount
		l.lines[i].Amount = take[i].Amount
		ends = minTime(ends, now.Add(st.ResetIn))
	}
	l.ends = ends
	l.last = now
}

// statesRef is the window the lease's counts were taken in.
func (l *windowLease) statesRef(i int) store.WindowRef { return l.states[i].Ref }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Settle implements [store.Requests]: a reservation made in a lease is
// settled in it, one the store made is settled by the store; window
// corrections are queued and written every Tick. A queued correction is
// reported applied; one whose window has ended by then is dropped by the
// store, as AdjustWindow would.
func (s *Store) Settle(ctx context.Context, st store.Settlement) (store.SettleResult, error) {
	s.mu.Lock()
	h := s.holds[st.ID]
	if st.ID != (store.ReservationID{}) && h == nil {
		s.mu.Unlock()
		s.o.Metrics.call("request")
		return s.Store.Settle(ctx, st)
	}
	if !st.Release && st.Actual < 0 {
		s.mu.Unlock()
		return store.SettleResult{}, fmt.Errorf("%w: actual %d", store.ErrInvalid, st.Actual)
	}
	res := store.SettleResult{Applied: make([]bool, len(st.Windows))}
	for i, d := range st.Windows {
		s.deltas[d.Ref] += d.Delta
		res.Applied[i] = true
	}
	if h != nil {
		res.Outcome = settleHold(h, st.Release, st.Actual)
	}
	s.mu.Unlock()
	return res, nil
}

// Commit implements [store.Budgets] for reservations made in a lease too.
func (s *Store) Commit(ctx context.Context, id store.ReservationID, actual int64) (store.Outcome, error) {
	if out, ok := s.settleLocal(id, false, actual); ok {
		return out, nil
	}
	return s.Store.Commit(ctx, id, actual)
}

// Release implements [store.Budgets] for reservations made in a lease too.
func (s *Store) Release(ctx context.Context, id store.ReservationID) (store.Outcome, error) {
	if out, ok := s.settleLocal(id, true, 0); ok {
		return out, nil
	}
	return s.Store.Release(ctx, id)
}

func (s *Store) settleLocal(id store.ReservationID, release bool, actual int64) (store.Outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.holds[id]
	if h == nil || (!release && actual < 0) {
		return 0, false
	}
	return settleHold(h, release, actual), true
}

// settleHold settles a request's reservation in its lease, once. Called
// with mu held.
func settleHold(h *hold, release bool, actual int64) store.Outcome {
	switch h.outcome {
	case store.OutcomeCommitted:
		return store.OutcomeAlreadyCommitted
	case store.OutcomeReleased:
		return store.OutcomeAlreadyReleased
	}
	l := h.lease
	l.held -= h.amount
	l.inflight--
	if release {
		h.outcome = store.OutcomeReleased
	} else {
		l.spent += actual
		h.outcome = store.OutcomeCommitted
	}
	return h.outcome
}

// Run flushes settlements and retires leases every Tick until ctx ends.
// Call Close after the requests have stopped.
func (s *Store) Run(ctx context.Context) {
	t := time.NewTicker(s.o.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.flush(false)
		}
	}
}

// Close retires every lease, committing what was spent in it, and writes
// the queued corrections. Requests still in flight in a lease are
// committed with what they had settled.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.bg.Wait()
	s.flush(true)
	if s.o.Spool != nil {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		_, _ = s.o.Spool.Replay(ctx)
		cancel()
	}
}

// flush retires the leases that are done and writes the corrections. With
// all, every lease is done.
func (s *Store) flush(all bool) {
	s.flushing.Lock()
	defer s.flushing.Unlock()
	now := s.o.Now()
	s.mu.Lock()
	if all {
		s.closed = true
	}
	for k, set := range s.budgets {
		keep := set.open[:0]
		for _, l := range set.open {
			idle := now.Sub(l.used) >= s.o.Idle && l.inflight == 0
			if all || idle || now.Sub(l.taken) >= 4*s.o.MaxAge {
				l.open = false
				s.retiring = append(s.retiring, l)
				continue
			}
			keep = append(keep, l)
			if now.Sub(l.taken) >= s.o.MaxAge && l.used.After(l.taken) && !set.loading && !s.closed {
				// A lease that lent is replaced by a fresh one, so spend
				// reaches the store within about MaxAge; one that did not
				// is left to go idle.
				set.loading = true
				s.bg.Go(func() { s.takeBudget(set) })
			}
		}
		set.open = keep
		if len(set.open) == 0 && !set.loading {
			delete(s.budgets, k)
		}
	}
	var done []*budgetLease
	rest := s.retiring[:0]
	for _, l := range s.retiring {
		if all || l.inflight == 0 {
			done = append(done, l)
		} else {
			rest = append(rest, l)
		}
	}
	s.retiring = rest
	for k, l := range s.buckets {
		if all || (!l.loading && !now.Before(l.expires) && now.Sub(l.last) >= s.o.Idle) {
			delete(s.buckets, k)
		}
	}
	for k, l := range s.windows {
		if l.loading && !all {
			continue
		}
		if all || !now.Before(l.ends) || now.Sub(l.last) >= s.o.Idle {
			if now.Before(l.ends) {
				s.giveBackWindow(l)
			}
			delete(s.windows, k)
		}
	}
	var st store.Settlement
	for ref, d := range s.deltas {
		if d != 0 {
			st.Windows = append(st.Windows, store.WindowDelta{Ref: ref, Delta: d})
		}
	}
	clear(s.deltas)
	s.mu.Unlock()

	for _, l := range done {
		s.retire(l)
	}
	if len(st.Windows) > 0 {
		var (
			res store.SettleResult
			err error
		)
		s.background(func(ctx context.Context) { res, err = s.Store.Settle(ctx, st) })
		if err != nil || res.Lost > 0 {
			// Corrections, not spend: dropped, as Settle drops them.
			s.o.Log.Warn("lease: window corrections not written", "lost", max(res.Lost, 1))
		}
	}
}

// retire commits what a lease's requests spent (or releases an unused
// lease) and forgets its requests. A commit the store cannot take goes to
// the spool, or back to the retiring leases to be tried again.
func (s *Store) retire(l *budgetLease) {
	s.mu.Lock()
	spent := l.spent
	s.mu.Unlock()
	var (
		out store.Outcome
		err error
	)
	s.background(func(ctx context.Context) {
		if spent > 0 {
			out, err = s.Store.Commit(ctx, l.id, spent)
		} else {
			out, err = s.Store.Release(ctx, l.id)
		}
	})
	switch {
	case err == nil:
		s.o.Metrics.lease(out.String())
	case spent > 0 && s.o.Spool != nil && errors.Is(err, store.ErrUnavailable):
		if _, kerr := s.o.Spool.Keep(l.id, spent, err); kerr != nil {
			s.o.Metrics.lease("failed")
			s.o.Log.Error("lease: a budget lease's spend was not recorded", "tenant", l.id.Tenant, "micro_usd", spent, "error", kerr.Error())
		} else {
			s.o.Metrics.lease("spooled")
		}
	case errors.Is(err, store.ErrUnavailable):
		// Tried again next Tick: the room of an unused lease is held
		// until then (or until its TTL, should the replica stop).
		s.mu.Lock()
		s.retiring = append(s.retiring, l)
		s.mu.Unlock()
		return
	case spent > 0:
		s.o.Metrics.lease("failed")
		s.o.Log.Error("lease: committing a budget lease failed", "tenant", l.id.Tenant, "micro_usd", spent, "error", err.Error())
	}
	// A lease whose take never landed is unknown to the store: nothing to
	// give back.
	s.mu.Lock()
	for _, id := range l.ids {
		delete(s.holds, id)
	}
	s.mu.Unlock()
}

var _ store.Store = (*Store)(nil)

// The calls below are the store's own; they are counted as made on the
// request path, since the quota filter makes them while a request waits
// (a plan narrowed to fit a budget, a fallback provider's windows, the
// cost governor's view of a quiet tenant).

// Reserve implements [store.Budgets].
func (s *Store) Reserve(ctx context.Context, id store.ReservationID, lines []store.BudgetLine, amount int64, ttl time.Duration) error {
	s.o.Metrics.call("request")
	return s.Store.Reserve(ctx, id, lines, amount, ttl)
}

// AddWindows implements [store.Limits].
func (s *Store) AddWindows(ctx context.Context, group string, lines []store.WindowLine) (store.WindowResult, error) {
	s.o.Metrics.call("request")
	return s.Store.AddWindows(ctx, group, lines)
}

// Budget implements [store.Budgets].
func (s *Store) Budget(ctx context.Context, line store.BudgetLine) (store.BudgetState, error) {
	s.o.Metrics.call("request")
	return s.Store.Budget(ctx, line)
}
