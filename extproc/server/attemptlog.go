package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"

	accesslogdatav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/service/accesslog/v3"

	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/filters"
)

// noResponse is the failure of an attempt that got no response headers
// from its provider.
const noResponse = "no response (connect failure, reset or timeout)"

// AttemptLog returns the gRPC access-log service that receives Envoy's
// router upstream log: one entry for each attempt that failed (the last
// attempt's outcome is read from the answer itself). Envoy sends it off the
// request path, so learning why an attempt failed costs the request no
// ext_proc message. The same service receives the log of requests a
// timeout of Envoy's cut ([contract.CutLogName]).
func (s *Server) AttemptLog() accesslogv3.AccessLogServiceServer { return attemptLog{s: s} }

type attemptLog struct {
	accesslogv3.UnimplementedAccessLogServiceServer
	s *Server
}

func (l attemptLog) StreamAccessLogs(stream accesslogv3.AccessLogService_StreamAccessLogsServer) error {
	ctx := stream.Context()
	logged, phase := l.s.attemptLogged, "attempt_log"
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&accesslogv3.StreamAccessLogsResponse{})
		}
		if err != nil {
			if done(err) {
				return nil
			}
			return err
		}
		start := l.s.now()
		// Only a stream's first message names its log.
		if msg.GetIdentifier().GetLogName() == contract.CutLogName {
			logged, phase = l.s.cutLogged, "cut_log"
		}
		for _, e := range msg.GetHttpLogs().GetLogEntry() {
			logged(ctx, e)
		}
		l.s.metrics.observePhase(phase, l.s.now().Sub(start))
	}
}

// cutLogged notes that a timeout of Envoy's ended the request an entry of
// [contract.CutLogName] names; if its answer had begun, the request's end
// ([Server.unfinished]) blames the provider.
func (s *Server) cutLogged(_ context.Context, e *accesslogdatav3.HTTPAccessLogEntry) {
	if lv := s.loggedExchange(e); lv != nil {
		lv.cutByEnvoy.Store(true)
	}
}

// loggedExchange finds the exchange in flight a log entry is about, or nil
// for a request already over.
func (s *Server) loggedExchange(e *accesslogdatav3.HTTPAccessLogEntry) *live {
	id := e.GetRequest().GetRequestId()
	if id == "" {
		id = e.GetRequest().GetRequestHeaders()["x-request-id"]
	}
	v, ok := s.exchanges.Load(id)
	if !ok {
		return nil
	}
	return v.(*live)
}

// attemptLogged records the outcome of the attempt a log entry describes.
// The attempt's own stream reaches ext_proc on a connection of its own and
// may trail its log entry (a retry whose TLS handshake failed is logged at
// once): an entry that matches no attempt yet waits a moment for it, apart
// from the other entries. An entry for a request already over (its
// outcome was settled without it) is dropped.
func (s *Server) attemptLogged(ctx context.Context, e *accesslogdatav3.HTTPAccessLogEntry) {
	lv := s.loggedExchange(e)
	if lv == nil {
		return
	}
	c := e.GetCommonProperties()
	n, cluster := int(c.GetUpstreamRequestAttemptCount()), c.GetUpstreamCluster()
	if a := attemptOf(lv.x, n, cluster); a != nil {
		s.settleLogged(ctx, lv, a, e)
		return
	}
	go func() {
		ctx := context.WithoutCancel(ctx)
		for deadline := time.Now().Add(streamWait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if a := attemptOf(lv.x, n, cluster); a != nil {
				s.settleLogged(ctx, lv, a, e)
				return
			}
		}
		// No stream came: the attempt failed before Envoy ran its filters
		// (a TLS handshake that failed), and its log entry is all there
		// is of it.
		if a := loggedAttempt(lv.x, cluster, s.now()); a != nil {
			s.settleLogged(ctx, lv, a, e)
			return
		}
		s.log.LogAttrs(ctx, slog.LevelDebug, "attempt log entry matches no attempt", slog.String("request_id", lv.x.ID),
			slog.Int("attempt", n), slog.String("cluster", cluster))
	}()
}

// loggedAttempt makes the attempt a log entry of cluster describes when no
// stream took it: the earliest retry the plan sends to that cluster that
// has no attempt yet; nil when there is none.
func loggedAttempt(x *filters.Exchange, cluster string, now time.Time) *filters.Attempt {
	seen := map[int]bool{}
	for _, a := range x.Attempts() {
		seen[a.N] = true
	}
	for n := 2; n <= plannedAttempts(x); n++ {
		if !seen[n] && x.Plan[n-1].Provider().Cluster == cluster {
			if a, ok := x.NewAttempt(n, now); ok {
				return a
			}
		}
	}
	return nil
}

// settleLogged settles attempt a from its log entry.
func (s *Server) settleLogged(ctx context.Context, lv *live, a *filters.Attempt, e *accesslogdatav3.HTTPAccessLogEntry) {
	c := e.GetCommonProperties()
	now := s.now()
	o := filters.Outcome{Status: int(e.GetResponse().GetResponseCode().GetValue()), Latency: now.Sub(sentOrStarted(a))}
	if o.Status == 0 {
		flags := logFlags(c.GetResponseFlags())
		o.Cause, o.Failure = causeOf(lv.x, a, flags, now), unreachable(a.Target.Provider(), flags, c.GetUpstreamTransportFailureReason())
	}
	for k, v := range e.GetResponse().GetResponseHeaders() {
		o.Header = append(o.Header, filters.Header{Key: k, Value: v})
	}
	s.settle(ctx, lv, a, o)
}

// sentOrStarted is when the provider's time on an attempt began: when the
// request reached it, or the attempt's start if it never did.
func sentOrStarted(a *filters.Attempt) time.Time {
	if sent := a.SentAt(); !sent.IsZero() {
		return sent
	}
	return a.Started
}

// attemptOf finds attempt n of an exchange, or when Envoy did not number
// the entry, the earliest attempt on cluster whose outcome is unknown.
func attemptOf(x *filters.Exchange, n int, cluster string) *filters.Attempt {
	for _, a := range x.Attempts() {
		if n > 0 && a.N == n {
			return a
		}
		if n == 0 && !a.Outcome().Done && (cluster == "" || a.Target.Provider().Cluster == cluster) {
			return a
		}
	}
	return nil
}

// settleLast records the last attempt's outcome from the answer that
// reached the router: its status and headers, or, when Envoy made the
// answer itself, no response, blamed by the reply's flags.
func (s *Server) settleLast(ctx context.Context, lv *live, status int, hdrs filters.Headers) {
	a := lv.x.LastAttempt()
	if a == nil {
		return
	}
	now := s.now()
	flags := hdrs.Get(contract.LocalReplyHeader)
	if n := localReplyAttempt(hdrs); n > a.N && hasFlag(flags, []string{"UH"}) {
		// A retry whose provider had no address opened no upstream
		// stream: Envoy's reply is the only word of that attempt.
		if na, ok := lv.x.NewAttempt(n, now); ok {
			a = na
		}
	}
	o := filters.Outcome{Status: status, Header: hdrs, Latency: now.Sub(sentOrStarted(a))}
	if flags != "" {
		o = filters.Outcome{Cause: causeOf(lv.x, a, flags, now), Latency: o.Latency,
			Failure: unreachable(a.Target.Provider(), flags, hdrs.Get(contract.LocalReplyFailureHeader))}
	}
	s.settle(ctx, lv, a, o)
}

// streamWait bounds how long an attempt log entry waits for its attempt's
// stream before it stands for the attempt itself: the answer, which waits
// longer (attemptWait), then finds the attempt settled.
const streamWait = 200 * time.Millisecond

// settleHedge takes the answer that reached the router-level stream of a
// hedged request as the winner's: the attempt on the provider Envoy names
// ([contract.AnsweredByHeader]; a hedge races two providers, so the
// provider tells the attempt). Every other attempt under way lost the
// hedge: Envoy cancelled it as the winner's headers passed, and its
// outcome is that (not its provider's failure, though it may bill), also
// when Envoy's attempt log got here first and found no response.
func (s *Server) settleHedge(ctx context.Context, lv *live, provider string) {
	x := lv.x
	i := slices.IndexFunc(x.Attempts(), func(a *filters.Attempt) bool { return a.Target.Provider().Name == provider })
	if i < 0 {
		// Envoy named no provider the request tried: the most recent
		// attempt stands, as without a hedge.
		s.log.LogAttrs(ctx, slog.LevelWarn, "hedged answer names no attempt's provider", slog.String("request_id", x.ID), slog.String("provider", provider))
		return
	}
	n := x.Attempts()[i].N
	x.SetAnswered(n)
	now := s.now()
	lost := func(a *filters.Attempt) filters.Outcome {
		return filters.Outcome{Done: true, Cause: filters.CauseHedged, Latency: now.Sub(sentOrStarted(a)),
			Failure: "hedge lost: attempt " + strconv.Itoa(n) + " answered first"}
	}
	for _, a := range x.Attempts() {
		if o := a.Outcome(); a.N != n && o.Done && o.Status == 0 && o.Cause == filters.CauseExcused {
			l := lost(a) // before Amend, which holds the attempt's lock
			a.Amend(func(o *filters.Outcome) { *o = l })
		}
	}
	for _, a := range x.Hedged() {
		s.settle(ctx, lv, a, lost(a))
	}
}

// attemptWait bounds how long the answer of a request whose every attempt
// failed waits for its attempts' streams to reach ext_proc, and an attempt
// log entry for its attempt: long enough for a loaded machine, and paid
// only by a request that fails anyway.
const attemptWait = time.Second

// awaitAttempts waits at most d until x's n-th attempt has been handed to
// Envoy: not only started, since its stream is still writing its
// translation (which the answer reads) until then, and SentAt, under the
// attempt's lock, orders those writes before this stream's reads; or
// until it is settled, an attempt no stream took having been made from
// its log entry.
func awaitAttempts(x *filters.Exchange, n int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if a := x.LastAttempt(); a != nil && a.N >= n && (!a.SentAt().IsZero() || a.Outcome().Done) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// awaitOutcomes waits at most d until every attempt's outcome is known and
// returns the attempts still unknown. A retried attempt's outcome comes in
// Envoy's attempt log, which may trail the answer by a moment.
func (s *Server) awaitOutcomes(x *filters.Exchange, d time.Duration) []*filters.Attempt {
	deadline := time.Now().Add(d)
	for {
		u := x.Unsettled()
		if len(u) == 0 || !time.Now().Before(deadline) {
			return u
		}
		time.Sleep(time.Millisecond)
	}
}

// localReplyAttempt is the attempt Envoy's local reply names, 0 on an
// answer that is not one: the header is then absent, and parsing "" would
// allocate an error on every request.
func localReplyAttempt(hdrs filters.Headers) int {
	v := hdrs.Get(contract.LocalReplyAttemptHeader)
	if v == "" {
		return 0
	}
	n, _ := strconv.Atoi(v)
	return n
}
