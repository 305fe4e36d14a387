package manage

import (
	"crypto/sha256"
	"crypto/subtle"
	"sync"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

// Verdict is what [Gate.Check] made of a presented admin key.
type Verdict int

// The verdicts.
const (
	// Admitted: the key is the policy's admin key.
	Admitted Verdict = iota
	// Disabled: the policy sets no admin key, so nothing is admitted.
	Disabled
	// Throttled: the address failed too often; its key was not read.
	Throttled
	// Missing: no key was presented.
	Missing
	// Invalid: the key is not the admin key.
	Invalid
)

// Reason names a refusal for the audit trail.
func (v Verdict) Reason() string {
	switch v {
	case Disabled:
		return "admin_disabled"
	case Throttled:
		return "throttled"
	case Missing:
		return "missing_api_key"
	case Invalid:
		return "invalid_api_key"
	}
	return ""
}

// Failed admin keys are throttled per client address: a client that
// presents more than failuresPerWindow wrong or missing keys within a
// window is refused for the rest of it, before its key is even read, so
// that guessing the admin key costs a minute per handful of guesses. The
// count is this replica's; each replica holds its own.
const (
	failuresPerWindow = 10
	failureWindow     = time.Minute
	// maxClients bounds the addresses remembered; past it, the windows
	// that ended are forgotten, and if that frees nothing, all are.
	maxClients = 10_000
)

// Gate checks admin keys and counts the failures per client address in
// fixed windows. It is safe for concurrent use.
type Gate struct {
	mu      sync.Mutex
	now     func() time.Time
	clients map[string]*failures
}

type failures struct {
	since time.Time
	n     int
	// told is set once the client's throttling of this window was
	// reported: one audit line a window, not one a guess.
	told bool
}

// NewGate returns a gate reading the time from now.
func NewGate(now func() time.Time) *Gate {
	return &Gate{now: now, clients: map[string]*failures{}}
}

// Check judges token, presented from addr, against the admin key of g.
// For a throttled address, retry is how long it stays so, and first is
// set the first time in a window it is refused, so that the throttling
// is reported once.
func (gt *Gate) Check(g *policy.Gateway, addr, token string) (v Verdict, retry time.Duration, first bool) {
	if !g.HasAdminKey {
		return Disabled, 0, false
	}
	if retry, first, ok := gt.blocked(addr); ok {
		return Throttled, retry, first
	}
	if token == "" {
		gt.failed(addr)
		return Missing, 0, false
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], g.AdminKeyHash[:]) != 1 {
		gt.failed(addr)
		return Invalid, 0, false
	}
	return Admitted, 0, false
}

// blocked reports whether addr is throttled, and for how long still;
// first is set the first time in a window it is asked for a throttled
// client.
func (gt *Gate) blocked(addr string) (retry time.Duration, first bool, ok bool) {
	gt.mu.Lock()
	defer gt.mu.Unlock()
	f := gt.clients[addr]
	now := gt.now()
	if f == nil || now.Sub(f.since) >= failureWindow || f.n < failuresPerWindow {
		return 0, false, false
	}
	first, f.told = !f.told, true
	return f.since.Add(failureWindow).Sub(now), first, true
}

// failed counts a failed key of addr.
func (gt *Gate) failed(addr string) {
	gt.mu.Lock()
	defer gt.mu.Unlock()
	now := gt.now()
	f := gt.clients[addr]
	if f == nil || now.Sub(f.since) >= failureWindow {
		if f == nil && len(gt.clients) >= maxClients {
			gt.sweep(now)
		}
		f = &failures{since: now}
		gt.clients[addr] = f
	}
	f.n++
}

func (gt *Gate) sweep(now time.Time) {
	for a, f := range gt.clients {
		if now.Sub(f.since) >= failureWindow {
			delete(gt.clients, a)
		}
	}
	if len(gt.clients) >= maxClients {
		clear(gt.clients)
	}
}
