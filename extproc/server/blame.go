package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	accesslogdatav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/switchyard/switchyard/apischema/openai"
	"github.com/switchyard/switchyard/filters"
)

// providerFlags are the response flags that only a provider causes:
// connection failure (UF), remote reset (UR), connection termination (UC),
// retries exhausted on those (URX) and the per-try timeout (UT, checked
// against the time the provider really had). Every other flag (overflow
// UO, local reset LR, downstream termination DC, ...) is Envoy's or the
// client's doing.
var providerFlags = []string{"UF", "UR", "UC", "URX", "UT"}

// timeoutShare is how much of the per-try timeout an attempt must have
// spent at its provider for a missing first byte to be the provider's:
// Envoy starts the timer a little before ext_proc sees the attempt.
const timeoutShare = 0.9

// causeOf says whose doing an attempt that got no response headers was,
// from the response flags Envoy gave it: its attempt-log entry's for a
// retried attempt, its own reply's for the last one.
func causeOf(x *filters.Exchange, a *filters.Attempt, flags string, now time.Time) filters.Cause {
	if hasFlag(flags, providerFlags) {
		return providerTimed(x, a, now)
	}
	return filters.CauseExcused
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

// unfinished says why a request ended before its answer was complete. A
// non-streamed answer whose headers came but whose body was still
// unfinished at the route's answer_timeout was cut by Envoy (which
// answers 504 upstream_timeout without ext_proc): the provider dripped
// it, and its attempt, first settled as a success by its headers, is
// amended to the provider's timeout. Anything else is the client leaving.
func (s *Server) unfinished(ctx context.Context, lv *live) error {
	x := lv.x
	a, all := x.LastAttempt(), x.Attempts()
	if lv.streaming || a == nil || x.Route == nil || x.Response.Status == 0 {
		return ErrClientGone
	}
	now := s.now()
	if now.Sub(all[0].Started) < time.Duration(float64(x.Route.AnswerTimeout)*timeoutShare) {
		return ErrClientGone
	}
	a.Amend(func(o *filters.Outcome) {
		*o = filters.Outcome{Done: true, Cause: filters.CauseTimeout, Failure: "answer not complete within the route's answer_timeout", Latency: now.Sub(sentOrStarted(a))}
	})
	lv.chain.AttemptDone(ctx, x, a)
	x.Response.Status = http.StatusGatewayTimeout
	return filters.Reject(http.StatusGatewayTimeout, openai.TypeUpstream, "upstream_timeout",
		"the provider did not complete its answer within %s", x.Route.AnswerTimeout)
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

// logFlags spells an attempt-log entry's response flags the way Envoy's
// %RESPONSE_FLAGS% does, for the ones blame reads.
func logFlags(f *accesslogdatav3.ResponseFlags) string {
	var out []string
	for _, fl := range []struct {
		set  bool
		name string
	}{
		{f.GetUpstreamConnectionFailure(), "UF"},
		{f.GetUpstreamRemoteReset(), "UR"},
		{f.GetUpstreamConnectionTermination(), "UC"},
		{f.GetUpstreamRetryLimitExceeded(), "URX"},
		{f.GetUpstreamRequestTimeout(), "UT"},
		{f.GetUpstreamOverflow(), "UO"},
		{f.GetLocalReset(), "LR"},
		{f.GetDownstreamConnectionTermination(), "DC"},
	} {
		if fl.set {
			out = append(out, fl.name)
		}
	}
	return strings.Join(out, ",")
}

// settle records an attempt's outcome, unless one is known already, and
// runs the attempt-done hooks.
func (s *Server) settle(ctx context.Context, lv *live, a *filters.Attempt, o filters.Outcome) {
	if o.Status == 0 {
		switch o.Cause {
		case filters.CauseTimeout:
			o.Failure = "no first byte within the per-try timeout"
		case filters.CauseExcused:
			o.Failure = "no response (cancelled by the gateway or the client)"
		default:
			o.Failure = noResponse
		}
	}
	if a.Finish(o) {
		lv.chain.AttemptDone(context.WithoutCancel(ctx), lv.x, a)
	}
}
