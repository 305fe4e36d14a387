package admin

import (
	"sync"
	"time"
)

// Failed admin keys are throttled per client address: a client that
// presents more than failuresPerWindow wrong or missing keys within a
// window is refused 429 for the rest of it, before its key is even read,
// so that guessing the admin key costs a minute per handful of guesses.
// The count is this replica's; each replica holds its own.
const (
	failuresPerWindow = 10
	failureWindow     = time.Minute
	// maxClients bounds the addresses remembered; past it, the windows
	// that ended are forgotten, and if that frees nothing, all are.
	maxClients = 10_000
)

// throttle counts failed admin keys per client address in fixed windows.
type throttle struct {
	mu      sync.Mutex
	now     func() time.Time
	clients map[string]*failures
}

type failures struct {
	since time.Time
	n     int
	// told is set once the client's throttling of this window went to
	// the audit trail: one line a window, not one a guess.
	told bool
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, clients: map[string]*failures{}}
}

// blocked reports whether addr is throttled, and for how long still; first
// is set the first time in a window it is asked for a throttled client.
func (t *throttle) blocked(addr string) (retry time.Duration, first bool, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.clients[addr]
	now := t.now()
	if f == nil || now.Sub(f.since) >= failureWindow || f.n < failuresPerWindow {
		return 0, false, false
	}
	first, f.told = !f.told, true
	return f.since.Add(failureWindow).Sub(now), first, true
}

// failed counts a failed key of addr.
func (t *throttle) failed(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	f := t.clients[addr]
	if f == nil || now.Sub(f.since) >= failureWindow {
		if f == nil && len(t.clients) >= maxClients {
			t.sweep(now)
		}
		f = &failures{since: now}
		t.clients[addr] = f
	}
	f.n++
}

func (t *throttle) sweep(now time.Time) {
	for a, f := range t.clients {
		if now.Sub(f.since) >= failureWindow {
			delete(t.clients, a)
		}
	}
	if len(t.clients) >= maxClients {
		clear(t.clients)
	}
}
