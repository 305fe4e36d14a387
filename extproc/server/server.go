package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/extproc/tracing"
	"github.com/switchyard/switchyard/filters"
)

// ErrClientGone is the Done cause when the stream ends before the response
// completed (the client disconnected or Envoy reset the request).
var ErrClientGone = filters.ErrClientGone

// Runtime is what one policy version compiles to.
type Runtime struct {
	Policy *policy.Policy
	Chains map[string]*filters.Chain
	// Tracing is nil when the policy traces nothing.
	Tracing *tracing.Tracer
}

// Server implements the ext_proc ExternalProcessor service.
type Server struct {
	extprocv3.UnimplementedExternalProcessorServer

	runtime   func() *Runtime
	log       *slog.Logger
	now       func() time.Time
	exchanges sync.Map // request ID → *live
	metrics   *phaseMetrics
	adm       admission
	// legClient makes a hybrid request's calls (hybrid.go).
	legClient *http.Client
	// phases runs the chain's phases off the streams' goroutines
	// (phases_pool.go).
	phases *phasePool
	// plans keeps the route metadata of each plan (planMetadata).
	plans planCache
}

// SetAdmission sets the server's bounds; call it before serving.
func (s *Server) SetAdmission(a Admission) { s.adm.limits = a }

// New returns a server that reads the current runtime from rt on every new
// request, so a reload applies to the next request and never to one in
// flight.
func New(rt func() *Runtime, log *slog.Logger) *Server {
	return &Server{runtime: rt, log: log, now: time.Now, metrics: newPhaseMetrics(), legClient: newLegClient(), phases: newPhasePool()}
}

// live is an exchange in flight with the chain it runs.
type live struct {
	x      *filters.Exchange
	chain  *filters.Chain
	tracer *tracing.Tracer
	// cause is why the exchange ended early (a refusal), nil when served.
	cause error
	// complete is set once the response has been fully processed.
	complete bool
	// buffered holds the response body of a buffered (non-stream) answer.
	streaming bool
	// unsent is the first attempt, translated in the reply about to go
	// to Envoy; it is sent when that reply is.
	unsent *filters.Attempt
	// lastByte is when the answer last moved: its headers, or a chunk.
	lastByte time.Time
	// cutByEnvoy is set by Envoy's cut log: a timeout of Envoy's ended
	// the request ([Server.unfinished]).
	cutByEnvoy atomic.Bool
	// cut is set when a stream that ran past stream_timeout is sent its
	// error event ([Server.responseBody]); the stream then ends.
	cut bool
	// touched names the headers the reply to the request headers set or
	// removed: the body reply's view of the request is x.Header but for
	// them (dropUnchanged).
	touched []string
	// extend asks Envoy to wait up to d for the reply to the message being
	// processed (a hybrid request's calls take as long as answers do).
	extend func(d time.Duration)
	// sets is where each reply's header mutation is built, one reply
	// after another; given back when the exchange is done.
	sets *headerSets
}

// Process implements the ext_proc stream.
func (s *Server) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	if v := md.Get(contract.PhaseHeader); len(v) > 0 && v[0] == contract.PhaseUpstream {
		return s.processAttempt(stream)
	}
	return s.processRequest(stream)
}

// Activity returns how many requests are in flight and how many were
// admitted since the server began: together they tell a quiet spell.
func (s *Server) Activity() (inFlight, started int64) {
	return s.adm.n.Load(), s.adm.started.Load()
}

// InFlight returns how many exchanges are open.
func (s *Server) InFlight() int {
	n := 0
	s.exchanges.Range(func(_, _ any) bool { n++; return true })
	return n
}

func (s *Server) processRequest(stream extprocv3.ExternalProcessor_ProcessServer) (err error) {
	ctx := stream.Context()
	var (
		lv       *live
		admitted bool
		held     int64 // body bytes held against the admission bound
	)
	defer func() {
		if admitted {
			s.adm.leave(held)
		}
		if lv == nil {
			return
		}
		s.phases.run(func() { s.done(ctx, lv) })
	}()
	// Runs before the deferred Done above, so Done sees the 500.
	defer func() {
		if p := recover(); p != nil {
			id := ""
			if lv != nil {
				id = lv.x.ID
			}
			e := s.recovered(ctx, stream, p, "request", id)
			if lv != nil {
				lv.cause, lv.complete = e, true
				lv.x.Response.Status = e.Status
			}
			err = nil
		}
	}()
	for {
		req, err := recv(stream)
		if req == nil {
			return err
		}
		start := s.now()
		var resp *extprocv3.ProcessingResponse
		switch v := req.Request.(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			if lv != nil {
				return status.Error(codes.FailedPrecondition, "request headers twice")
			}
			ctx = withRequestID(ctx, v.RequestHeaders)
			if e := s.adm.enter(); e != nil {
				// Shed before any work, and without a log line each: a
				// flood must not buy itself a log write per request.
				s.metrics.shed.WithLabelValues("requests").Inc()
				resp = errorResponse(toHeaders(v.RequestHeaders.GetHeaders()).Get("x-request-id"), e, nil)
				break
			}
			admitted = true
			s.phases.run(func() { lv, resp = s.requestHeaders(ctx, v.RequestHeaders) })
			if lv != nil {
				lv.extend = func(d time.Duration) {
					_ = stream.Send(&extprocv3.ProcessingResponse{OverrideMessageTimeout: durationpb.New(d)})
				}
			}
		case *extprocv3.ProcessingRequest_RequestBody:
			if lv == nil {
				return status.Error(codes.FailedPrecondition, "request body before headers")
			}
			n := int64(len(v.RequestBody.GetBody()))
			if !s.adm.hold(n) {
				s.metrics.shed.WithLabelValues("bytes").Inc()
				e := overloaded("request bytes in flight")
				lv.cause, lv.x.Response.Status = e, e.Status
				resp = errorResponse(lv.x.ID, e, lv.x)
				break
			}
			held += n
			s.phases.run(func() { resp = s.requestBody(ctx, lv, v.RequestBody.GetBody()) })
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			if lv == nil {
				// A reply made before ext_proc saw the request (Envoy's local
				// rate limit, say) passes through untouched.
				resp = respHeadersResponse(&extprocv3.CommonResponse{})
				break
			}
			s.phases.run(func() { resp = s.responseHeaders(ctx, lv, v.ResponseHeaders) })
		case *extprocv3.ProcessingRequest_ResponseBody:
			if lv == nil {
				resp = respBodyResponse(&extprocv3.CommonResponse{})
				break
			}
			s.phases.run(func() { resp = s.responseBody(ctx, lv, v.ResponseBody) })
		case *extprocv3.ProcessingRequest_RequestTrailers:
			resp = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}}
		case *extprocv3.ProcessingRequest_ResponseTrailers:
			resp = &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}}
		default:
			return status.Errorf(codes.Unimplemented, "unexpected message %T", v)
		}
		accounting := annotate(resp, lv)
		stampTrace(resp, lv)
		s.metrics.observe(req, false, s.now().Sub(start))
		// An attempt is marked sent before its request goes: once Send
		// returns, Envoy may already hold the provider's answer and the
		// request's stream settle on it (a hedge's loser is charged only
		// if it was sent) before this goroutine runs again. A Send that
		// fails breaks the stream, and Envoy fails the attempt with it.
		if lv != nil && lv.unsent != nil {
			lv.unsent.MarkSent(s.now())
			lv.unsent = nil
		}
		sendErr := stream.Send(resp)
		accounting.release()
		if sendErr != nil {
			return sendErr
		}
		if lv != nil && lv.cut {
			// A stream whose response has begun can only be ended by failing
			// this one: Envoy answers a gRPC error with a local reply, which
			// after the response headers is a reset of the client's stream,
			// behind the error event just sent, and no provider byte after it.
			return status.Error(codes.DeadlineExceeded, "the stream ran past stream_timeout; it ends after its error event")
		}

		if resp.GetImmediateResponse() != nil {
			if lv != nil {
				lv.complete = true
			}
			return nil
		}
	}
}

// done ends an exchange: its outcome settled, its usage recorded, its
// spans exported.
func (s *Server) done(ctx context.Context, lv *live) {
	cause := lv.cause
	end := s.now()
	dctx := context.WithoutCancel(ctx)
	if !lv.complete && cause == nil {
		cause = s.unfinished(dctx, lv)
	}
	// An attempt whose outcome never came ended with no answer for the
	// client and no failure Envoy logged: the client left, or the
	// gateway gave up. Not its provider's doing.
	for _, a := range s.awaitOutcomes(lv.x, outcomeWait) {
		s.settle(dctx, lv, a, filters.Outcome{Failure: noResponse, Cause: filters.CauseExcused, Latency: s.now().Sub(a.Started)})
	}
	lv.tracer.Decide(lv.x, cause, end)
	lv.chain.Done(dctx, lv.x, cause)
	s.exchanges.CompareAndDelete(lv.x.ID, lv)
	// Once no log entry can reach the exchange, its spans are built
	// from it on another goroutine.
	lv.tracer.Export(lv.x, cause, end)
	// Done runs after the stream's last reply was sent.
	lv.sets.release()
	lv.sets = nil
}

// recv returns Envoy's next message, or nil once the stream is over: with
// no error when Envoy closed it or the request was cancelled.
func recv(stream extprocv3.ExternalProcessor_ProcessServer) (*extprocv3.ProcessingRequest, error) {
	req, err := stream.Recv()
	if done(err) {
		return nil, nil
	}
	return req, err
}

// done reports whether a receive error is the normal end of a stream:
// Envoy closed it or the request was cancelled.
func done(err error) bool {
	return errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled
}

// outcomeWait bounds how long a finished request waits for the outcomes of
// its attempts from Envoy's attempt log before ending without them.
const outcomeWait = 500 * time.Millisecond

// processAttempt serves the per-attempt filter: the request headers come
// in and the translated request goes out, and that is the stream's only
// message. How the attempt ended comes later, off the request path: from
// the answer the router-level stream sees (the last attempt) or from
// Envoy's attempt log (the ones it retried).
func (s *Server) processAttempt(stream extprocv3.ExternalProcessor_ProcessServer) (err error) {
	ctx := stream.Context()
	var id string
	// Fails closed: the attempt is answered with the error, never
	// forwarded.
	defer func() {
		if p := recover(); p != nil {
			s.recovered(ctx, stream, p, "attempt", id)
			err = nil
		}
	}()
	for {
		req, err := recv(stream)
		if req == nil {
			return err
		}
		start := s.now()
		v, ok := req.Request.(*extprocv3.ProcessingRequest_RequestHeaders)
		if !ok {
			return status.Errorf(codes.FailedPrecondition, "unexpected message from the upstream filter: %T", req.Request)
		}
		ctx = withRequestID(ctx, v.RequestHeaders)
		id = toHeaders(v.RequestHeaders.GetHeaders()).Get("x-request-id")
		resp, a := s.attempt(ctx, v.RequestHeaders, req.GetAttributes())
		s.metrics.observe(req, true, s.now().Sub(start))
		if a != nil {
			a.MarkSent(s.now()) // before it goes, as the request's stream does
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}
