package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/filters"
)

// providerFlags are the response flags of Envoy's replies that only a
// provider causes: connection failure (UF), remote reset (UR), connection
// termination (UC), retries exhausted on those (URX) and the per-try
// timeout (UT, checked against the time the provider really had). Every
// other flag (overflow UO, local reset LR, downstream termination DC, ...)
// is Envoy's or the client's doing.
var providerFlags = []string{"UF", "UR", "UC", "URX", "UT"}

// timeoutShare is how much of the per-try timeout an attempt must have
// spent at its provider for a missing first byte to be the provider's:
// Envoy starts the timer a little before ext_proc sees the attempt.
const timeoutShare = 0.9

// verdicts decides whose doing an attempt that ended without response
// headers was. The attempt's stream alone cannot tell: Envoy cancels it
// the same way when the provider refused or reset the connection, when the
// client went away, and when Envoy gave up locally. What Envoy did next,
// as the request's own stream sees it, tells: it retried (the provider
// failed), it answered the client with an upstream failure (the reply's
// flags say which), or the request ended with no answer at all (the client
// left). So the attempt waits, parked, for that evidence.
type verdicts struct {
	mu       sync.Mutex
	parked   []*filters.Attempt
	answered bool   // the request's stream saw response headers
	flags    string // of Envoy's own reply, "" for a provider's answer
	local    bool   // the answer was Envoy's own reply
	ended    bool   // the request's stream is over
}

// attemptEnded settles an attempt whose stream ended without response
// headers, now if the evidence is in, or once it is.
func (s *Server) attemptEnded(ctx context.Context, lv *live, a *filters.Attempt) {
	now := s.now()
	from := a.Started
	if !a.Sent.IsZero() {
		from = a.Sent
	}
	if !a.Finish(filters.Outcome{Failure: "no response (connect failure, reset or timeout)", Latency: now.Sub(from)}) {
		return
	}
	v := &lv.verdicts
	v.mu.Lock()
	cause, known := v.judge(lv.x, a, now)
	if !known {
		v.parked = append(v.parked, a)
		v.mu.Unlock()
		return
	}
	v.mu.Unlock()
	s.settle(ctx, lv, a, cause)
}

// evidence re-judges the parked attempts after the request's stream
// learnt something: an attempt began, the answer's headers came, or the
// stream ended.
func (s *Server) evidence(ctx context.Context, lv *live, update func(v *verdicts)) {
	v := &lv.verdicts
	now := s.now()
	v.mu.Lock()
	if update != nil {
		update(v)
	}
	type judged struct {
		a     *filters.Attempt
		cause filters.Cause
	}
	var done []judged
	keep := v.parked[:0]
	for _, a := range v.parked {
		if cause, known := v.judge(lv.x, a, now); known {
			done = append(done, judged{a, cause})
		} else {
			keep = append(keep, a)
		}
	}
	v.parked = keep
	v.mu.Unlock()
	for _, d := range done {
		s.settle(ctx, lv, d.a, d.cause)
	}
}

// judge says whose doing a's missing response was, if the evidence so far
// tells. Called with v.mu held.
func (v *verdicts) judge(x *filters.Exchange, a *filters.Attempt, now time.Time) (filters.Cause, bool) {
	switch {
	case x.AttemptCount() > a.N:
		// Envoy retried: it saw a connect failure, a reset or a timeout,
		// never the client leaving or its own overflow (not retried).
		return providerTimed(x, a, now), true
	case v.answered && v.local && hasFlag(v.flags, providerFlags):
		return providerTimed(x, a, now), true
	case v.answered || v.ended:
		// The client left, Envoy refused locally, or an answer not about
		// this attempt came: nothing the provider did.
		return filters.CauseExcused, true
	}
	return filters.CauseNone, false
}

// providerTimed tells a provider's own failure from a per-try timeout
// that ran out while the request was still in the gateway.
func providerTimed(x *filters.Exchange, a *filters.Attempt, now time.Time) filters.Cause {
	limit := time.Duration(float64(x.Route.PerTryIdleTimeout) * timeoutShare)
	switch {
	case !a.Sent.IsZero() && now.Sub(a.Sent) >= limit:
		return filters.CauseTimeout
	case now.Sub(a.Started) >= limit:
		return filters.CauseExcused
	}
	return filters.CauseConnect
}

func hasFlag(flags string, want []string) bool {
	for _, f := range strings.Split(flags, ",") {
		for _, w := range want {
			if f == w {
				return true
			}
		}
	}
	return false
}

// settle gives an attempt its cause and runs the attempt-done hooks.
func (s *Server) settle(ctx context.Context, lv *live, a *filters.Attempt, cause filters.Cause) {
	a.Amend(func(o *filters.Outcome) {
		o.Cause = cause
		switch cause {
		case filters.CauseTimeout:
			o.Failure = "no first byte within the per-try timeout"
		case filters.CauseExcused:
			o.Failure = "no response (cancelled by the gateway or the client)"
		}
	})
	lv.chain.AttemptDone(context.WithoutCancel(ctx), lv.x, a)
}
