package health

import (
	"errors"
	"fmt"
	"time"

	"github.com/sony/gobreaker/v2"
)

// errFailed is what the breaker's counter is told a failed attempt returned.
var errFailed = errors.New("attempt failed")

// breaker is a provider's circuit breaker. gobreaker reads the wall clock
// (time.Now) for its open timeout and its counting interval, which a test
// cannot move, so the work is split: a gobreaker.TwoStepCircuitBreaker
// counts the closed state and decides, through ReadyToTrip, when to trip;
// the timed states (open for OpenTimeout, then half-open with a bounded
// number of probes) run here, against the monitor's clock. The counter is
// built with no Interval, so gobreaker never clears it on its own; a fresh
// counter replaces it every Interval of the monitor's clock and whenever
// the breaker closes, which is what gobreaker's own Interval and new
// generations do.
type breaker struct {
	cfg *BreakerConfig // the monitor's live settings, read under its lock

	counter  *gobreaker.TwoStepCircuitBreaker[struct{}]
	counting time.Time // when counter started
	tripped  string    // set by readyToTrip when it trips

	state     BreakerState
	since     time.Time
	reason    string               // why it last opened
	probes    map[uint64]time.Time // half-open slots in flight, by request key, with the time taken
	successes int                  // half-open probes that succeeded
}

func newBreaker(cfg *BreakerConfig, now time.Time) *breaker {
	b := &breaker{cfg: cfg, since: now}
	b.newCounter(now)
	return b
}

func (b *breaker) newCounter(now time.Time) {
	b.counter = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{ReadyToTrip: b.readyToTrip})
	b.counting = now
}

// readyToTrip is gobreaker's trip decision, called after each failure while
// the counter is closed.
func (b *breaker) readyToTrip(c gobreaker.Counts) bool {
	switch {
	case b.cfg.ConsecutiveFailures > 0 && c.ConsecutiveFailures >= uint32(b.cfg.ConsecutiveFailures):
		b.tripped = fmt.Sprintf("%d consecutive failures", c.ConsecutiveFailures)
	case b.cfg.FailureRatio > 0 && c.Requests >= uint32(b.cfg.MinRequests) &&
		float64(c.TotalFailures) >= b.cfg.FailureRatio*float64(c.Requests):
		b.tripped = fmt.Sprintf("%d of %d attempts failed", c.TotalFailures, c.Requests)
	default:
		return false
	}
	return true
}

// advance applies the passing of time: an open breaker turns half-open
// after OpenTimeout, and half-open slots without a result are given back
// after ProbeTimeout.
func (b *breaker) advance(now time.Time) {
	if b.state == BreakerOpen {
		until := b.since.Add(b.cfg.OpenTimeout)
		if now.Before(until) {
			return
		}
		b.state, b.since = BreakerHalfOpen, until
		b.probes, b.successes = map[uint64]time.Time{}, 0
	}
	if b.state != BreakerHalfOpen {
		return
	}
	for k, taken := range b.probes {
		if now.Sub(taken) >= b.cfg.ProbeTimeout {
			delete(b.probes, k)
		}
	}
	if b.successes >= b.cfg.HalfOpenProbes { // a reload lowered the number of probes
		b.close(now)
	}
}

// observe counts an attempt's result: in the counter while closed, as a
// probe result while half-open. An open breaker ignores results, as
// gobreaker ignores those of an earlier generation: they belong to
// requests sent before it opened.
func (b *breaker) observe(key uint64, failed bool, now time.Time) {
	switch b.state {
	case BreakerClosed:
		if b.cfg.Interval > 0 && now.Sub(b.counting) >= b.cfg.Interval {
			b.newCounter(now)
		}
		done, err := b.counter.Allow()
		if err != nil { // the counter is replaced as soon as it trips, so it is never open
			b.newCounter(now)
			return
		}
		if failed {
			done(errFailed)
		} else {
			done(nil)
		}
		if b.tripped != "" {
			b.open(now, b.tripped)
		}
	case BreakerHalfOpen:
		slot, ok := b.slotFor(key)
		if !ok {
			return
		}
		delete(b.probes, slot)
		if failed {
			b.open(now, "probe failed")
			return
		}
		b.successes++
		if b.successes >= b.cfg.HalfOpenProbes {
			b.close(now)
		}
	}
}

// probe reports whether the request with key may go through a half-open
// breaker, taking a slot for it if it has none. Asking again with the same
// key reuses the slot, so a router may admit the same request many times.
func (b *breaker) probe(key uint64, now time.Time) bool {
	if b.state != BreakerHalfOpen {
		return false
	}
	if _, ok := b.probes[key]; ok {
		return true
	}
	if len(b.probes)+b.successes >= b.cfg.HalfOpenProbes {
		return false
	}
	b.probes[key] = now
	return true
}

// slotFor picks the slot a half-open result settles: the request's own, or
// else the oldest (the lowest key among equals, for determinism).
func (b *breaker) slotFor(key uint64) (uint64, bool) {
	if _, ok := b.probes[key]; ok {
		return key, true
	}
	var best uint64
	var bestAt time.Time
	found := false
	for k, at := range b.probes {
		if !found || at.Before(bestAt) || (at.Equal(bestAt) && k < best) {
			best, bestAt, found = k, at, true
		}
	}
	return best, found
}

// trip opens a closed breaker, for a failure that needs no counting (one
// during a canary).
func (b *breaker) trip(now time.Time, why string) {
	if b.state == BreakerClosed {
		b.open(now, why)
	}
}

func (b *breaker) open(now time.Time, why string) {
	b.state, b.since, b.reason = BreakerOpen, now, why
	b.probes, b.successes, b.tripped = nil, 0, ""
}

func (b *breaker) close(now time.Time) {
	b.state, b.since, b.reason = BreakerClosed, now, ""
	b.probes, b.successes = nil, 0
	b.newCounter(now)
}

// BreakerStatus describes a provider's circuit breaker.
type BreakerStatus struct {
	State BreakerState `json:"state"`
	Since time.Time    `json:"since"`
	// Reason says why the breaker last opened.
	Reason string `json:"reason,omitempty"`
	// Requests, Failures and ConsecutiveFailures are the closed breaker's
	// counts since its interval began.
	Requests            int `json:"requests"`
	Failures            int `json:"failures"`
	ConsecutiveFailures int `json:"consecutive_failures"`
	// HalfOpenAt is when an open breaker lets probes through.
	HalfOpenAt time.Time `json:"half_open_at,omitzero"`
	// Probes are the half-open slots in flight; ProbeSuccesses the probes
	// that succeeded so far.
	Probes         int `json:"probes"`
	ProbeSuccesses int `json:"probe_successes"`
}

func (b *breaker) status() BreakerStatus {
	s := BreakerStatus{State: b.state, Since: b.since, Reason: b.reason, Probes: len(b.probes), ProbeSuccesses: b.successes}
	switch b.state {
	case BreakerClosed:
		c := b.counter.Counts()
		s.Requests, s.Failures, s.ConsecutiveFailures = int(c.Requests), int(c.TotalFailures), int(c.ConsecutiveFailures)
	case BreakerOpen:
		s.HalfOpenAt = b.since.Add(b.cfg.OpenTimeout)
	}
	return s
}
