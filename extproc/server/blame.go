package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	accesslogdatav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/filters"
)

// providerFlags are the response flags that only a provider causes:
// connection failure (UF), remote reset (UR), connection termination (UC),
// retries exhausted on those (URX) and the per-try timeouts (UT, and SI,
// which Envoy puts on an attempt its per-try idle timeout ended; both
// checked against the time the provider really had). Every other flag
// (overflow UO, local reset LR, downstream termination DC, ...) is
// Envoy's or the client's doing.
var providerFlags = []string{"UF", "UR", "UC", "URX", "UT", "SI"}

// timeoutShare is how much of the per-try timeout an attempt must have
// spent at its provider for a missing first byte to be the provider's:
// Envoy starts the timer a little before ext_proc sees the attempt.
const timeoutShare = 0.9

// causeOf says whose doing an attempt that got no response headers was,
// from the response flags Envoy gave it: its attempt-log entry's for a
// retried attempt, its own reply's for the last one. No host (UH) is the
// provider's name resolving to no address: a provider's cluster has
// neither health checks nor outlier ejection to empty it otherwise.
func causeOf(x *filters.Exchange, a *filters.Attempt, flags string, now time.Time) filters.Cause {
	if hedged(x) {
		// The per-try timeout of a hedged request is the hedge's delay:
		// running past it starts the second attempt, it fails nothing.
		flags = strings.Join(slices.DeleteFunc(strings.Split(flags, ","), func(f string) bool { return f == "UT" }), ",")
	}
	switch {
	case hasFlag(flags, []string{"UH"}):
		return filters.CauseNoAddress
	case hasFlag(flags, providerFlags):
		return providerTimed(x, a, now)
	}
	return filters.CauseExcused
}

// providerTimed tells a provider's own failure from a per-try timeout
// that ran out while the request was still in the gateway.
func providerTimed(x *filters.Exchange, a *filters.Attempt, now time.Time) filters.Cause {
	limit := time.Duration(float64(x.Route.PerTryIdleTimeout) * timeoutShare)
	switch sent := a.SentAt(); {
	case !sent.IsZero() && now.Sub(sent) >= limit:
		return filters.CauseTimeout
	case now.Sub(a.Started) >= limit:
		return filters.CauseExcused
	}
	return filters.CauseConnect
}

// unfinished says why a request ended after its answer began but before
// it was complete. A timeout of Envoy's cut it, and the provider is to
// blame, when the provider stalled (sent nothing for the per-try idle
// timeout) or the answer ran past its bound (answer_timeout for a
// non-streamed answer, which Envoy then answers with 504 upstream_timeout
// without ext_proc; for a stream stream_timeout, where ext_proc's own cut
// comes first, and a per-try idle timeout more). Envoy's cut log
// ([contract.CutLogName]) says so; the bound having run is enough when
// the log is late. The attempt, first settled as a success by its
// headers, is amended to the provider's timeout. Anything else is the
// client leaving.
func (s *Server) unfinished(ctx context.Context, lv *live) error {
	x := lv.x
	a, all := x.LastAttempt(), x.Attempts()
	if a == nil || x.Route == nil || x.Response.Status == 0 {
		return ErrClientGone
	}
	now := s.now()
	bound, what := x.Route.AnswerTimeout, "answer_timeout"
	if lv.streaming {
		bound, what = x.Route.StreamTimeout+x.Route.PerTryIdleTimeout, "stream_timeout"
	}
	overran := now.Sub(all[0].Started) >= time.Duration(float64(bound)*timeoutShare)
	// Only an answer silent for (nearly) the idle timeout can have been
	// cut by it: a client that leaves while bytes flow costs no wait.
	silent := now.Sub(lv.lastByte) >= time.Duration(float64(x.Route.PerTryIdleTimeout)*timeoutShare)
	switch {
	case overran:
		return s.providerTimedOut(ctx, lv, a, now, "answer not complete within the route's "+what)
	case silent && s.cutByEnvoy(lv):
		return s.providerTimedOut(ctx, lv, a, now, fmt.Sprintf("no byte within the per-try idle timeout (%s) after the answer began", x.Route.PerTryIdleTimeout))
	}
	return ErrClientGone
}

// cutByEnvoy reports whether Envoy's cut log names lv's request; it may
// trail the end of the request's stream by a moment.
func (s *Server) cutByEnvoy(lv *live) bool {
	for deadline := time.Now().Add(outcomeWait); !lv.cutByEnvoy.Load(); time.Sleep(time.Millisecond) {
		if !time.Now().Before(deadline) {
			return false
		}
	}
	return true
}

// providerTimedOut amends attempt a, whose answer began, to the
// provider's timeout (why says which), counts it against the provider
// unless its status already did, and returns the request's 504.
func (s *Server) providerTimedOut(ctx context.Context, lv *live, a *filters.Attempt, now time.Time, why string) error {
	x := lv.x
	counted := a.Outcome().Failed()
	began := sentOrStarted(a) // before Amend, which holds the attempt's lock
	a.Amend(func(o *filters.Outcome) {
		*o = filters.Outcome{Done: true, Cause: filters.CauseTimeout, Failure: why, Latency: now.Sub(began)}
	})
	if !counted {
		lv.chain.AttemptDone(ctx, x, a)
	}
	x.Response.Status = http.StatusGatewayTimeout
	return filters.Reject(http.StatusGatewayTimeout, openaiapi.TypeUpstream, "upstream_timeout", "the provider timed out: %s", why)
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
		{f.GetNoHealthyUpstream(), "UH"},
		{f.GetUpstreamRemoteReset(), "UR"},
		{f.GetUpstreamConnectionTermination(), "UC"},
		{f.GetUpstreamRetryLimitExceeded(), "URX"},
		{f.GetUpstreamRequestTimeout(), "UT"},
		{f.GetStreamIdleTimeout(), "SI"},
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
	if o.Status == 0 && o.Failure == "" {
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
		a.ReleaseHeader()
	}
}
