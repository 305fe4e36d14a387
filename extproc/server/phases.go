package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/translator"
)

func (s *Server) requestHeaders(ctx context.Context, h *extprocv3.HttpHeaders) (*live, *extprocv3.ProcessingResponse) {
	hdrs := toHeaders(h.GetHeaders())
	id := hdrs.Get("x-request-id")
	if id == "" {
		id = newID()
	}
	rt := s.runtime()
	path, query, _ := strings.Cut(hdrs.Get(":path"), "?")
	route := rt.Policy.Route(path)
	if route == nil {
		return nil, errorResponse(id, openaiapi.Errorf(http.StatusNotFound, openaiapi.TypeInvalidRequest, "unknown_url", "unknown URL: %s %s", hdrs.Get(":method"), path), nil)
	}
	x := &filters.Exchange{
		ID: id, Started: s.now(), Policy: rt.Policy, Route: route,
		Method: hdrs.Get(":method"), Path: path, Query: query, Header: hdrs,
	}
	lv := &live{x: x, chain: rt.Chains[route.Name], tracer: rt.Tracing, sets: headerSetsPool.Get().(*headerSets)}
	beginTrace(ctx, rt.Tracing, x)
	// Attempts find their exchange by this id, which a client may choose:
	// a second request under an id in flight would take over the first's
	// attempts (its provider, its key, its budget), so it is refused.
	if _, dup := s.exchanges.LoadOrStore(id, lv); dup {
		return nil, errorResponse(id, openaiapi.Errorf(http.StatusConflict, openaiapi.TypeInvalidRequest, "duplicate_request_id",
			"another request with this x-request-id is in flight; send a unique id or none"), x)
	}

	if err := lv.chain.RequestHeaders(ctx, x); err != nil {
		return lv, s.reject(ctx, lv, err)
	}
	if r := x.TakeReply(); r != nil {
		x.Response.Status = r.Status
		lv.chain.Complete(ctx, x)
		return lv, replyResponse(id, r)
	}
	if h.GetEndOfStream() {
		// No body will follow: run the body side now, on an empty body.
		c, md, errResp := s.runBody(ctx, lv, nil)
		if errResp != nil {
			return lv, errResp
		}
		// A headers reply replaces the (absent) body only when told to.
		c.Status = extprocv3.CommonResponse_CONTINUE_AND_REPLACE
		resp := headersResponse(c)
		resp.DynamicMetadata = md
		return lv, resp
	}
	set, remove := x.TakeRequestMutations()
	lv.touched = touchedBy(set, remove)
	return lv, headersResponse(&extprocv3.CommonResponse{HeaderMutation: lv.sets.mutation(set, remove)})
}

func (s *Server) requestBody(ctx context.Context, lv *live, body []byte) *extprocv3.ProcessingResponse {
	c, md, errResp := s.runBody(ctx, lv, body)
	if errResp != nil {
		return errResp
	}
	resp := bodyResponse(c)
	resp.DynamicMetadata = md
	return resp
}

// runBody runs the body side of the chain, translates the request for
// its first attempt and says where to send it: the providers in order
// (in the dynamic metadata it returns), the number of retries, and a
// cleared route cache so Envoy re-reads them. The first attempt so costs
// no message of its own: Envoy sends only the retries through the
// per-attempt filter ([contract.FirstAttemptTranslated]).
func (s *Server) runBody(ctx context.Context, lv *live, body []byte) (*extprocv3.CommonResponse, *structpb.Struct, *extprocv3.ProcessingResponse) {
	x := lv.x
	x.Body = body
	if err := lv.chain.RequestBody(ctx, x); err != nil {
		return nil, nil, s.reject(ctx, lv, err)
	}
	if r := x.TakeReply(); r != nil {
		x.Response.Status = r.Status
		// A reply of the chain's own is an answer too: on record before
		// the client has it.
		lv.chain.Complete(ctx, x)
		return nil, nil, replyResponse(x.ID, r)
	}
	if len(x.Plan) == 0 {
		return nil, nil, s.reject(ctx, lv, filters.Reject(http.StatusNotFound, openaiapi.TypeInvalidRequest, "unknown_url", "this path serves no model API"))
	}
	if x.Hybrid != nil {
		return nil, nil, s.hybrid(ctx, lv)
	}
	a, _ := x.NewAttempt(1, s.now())
	up, err := s.translated(ctx, lv, a, x.Header)
	if err != nil {
		return nil, nil, s.reject(ctx, lv, err)
	}
	set, remove := x.TakeRequestMutations()
	retries := plannedAttempts(x) - 1
	set = append(append(set, up.set...),
		filters.Header{Key: "x-envoy-max-retries", Value: strconv.Itoa(retries)},
		filters.Header{Key: contract.RouteHeader, Value: x.Route.Name})
	if hedged(x) {
		// The second attempt starts when the first has not answered
		// within the hedge's delay, and the first answer wins (Envoy's
		// hedge on per-try timeout; it shares the one retry).
		set = append(set,
			filters.Header{Key: "x-envoy-upstream-rq-per-try-timeout-ms", Value: strconv.FormatInt(max(x.Hedge.After.Milliseconds(), 1), 10)},
			filters.Header{Key: "x-envoy-hedge-on-per-try-timeout", Value: "true"})
	}
	remove = appendPresent(append(remove, slices.DeleteFunc(up.remove, removedByRoute)...), x.Header, clientRouterHeaders)
	bound := x.Route.AnswerTimeout
	if x.Chat != nil && x.Chat.Stream {
		// ext_proc cuts a stream at stream_timeout, on the first chunk
		// after it, with an error event ([Server.responseBody]); a stream
		// not yet cut by its per-try idle timeout sends one within that
		// timeout, so Envoy's bound is only the backstop.
		bound = x.Route.StreamTimeout + x.Route.PerTryIdleTimeout
	}
	set = append(set, filters.Header{Key: contract.AnswerTimeoutHeader, Value: strconv.FormatInt(bound.Milliseconds(), 10)})
	lv.unsent = a
	set = dropUnchanged(set, x.Header, lv.touched, remove)
	c := &extprocv3.CommonResponse{HeaderMutation: lv.sets.mutation(set, remove), BodyMutation: bodyMutation(a.Upstream.Body), ClearRouteCache: true}
	return c, planMetadata(&s.plans, x, a.Target.Provider().Cluster), nil
}

func removedByRoute(k string) bool { return slices.Contains(contract.RouteRemovedHeaders, k) }

// upstream is the header mutation that makes a client's request the
// translated request of one attempt.
type upstream struct {
	set    []filters.Header
	remove []string
}

// translated runs the attempt hooks for a, which translate the request
// for its provider, and returns the headers that go with the translated
// body: the provider's path, host and key, and the removal of every
// header of hdrs a provider must not get. A refusal, or a request no
// filter translated, ends the attempt with the error: it fails closed.
func (s *Server) translated(ctx context.Context, lv *live, a *filters.Attempt, hdrs filters.Headers) (upstream, error) {
	if err := lv.chain.Attempt(ctx, lv.x, a); err != nil {
		a.Finish(filters.Outcome{Status: filters.AsError(err, lv.x.ID).Status})
		return upstream{}, err
	}
	if a.Upstream.Path == "" {
		a.Finish(filters.Outcome{Status: http.StatusInternalServerError})
		return upstream{}, errUntranslated
	}
	p := a.Target.Provider()
	set := append(make([]filters.Header, 0, 4+len(a.Upstream.Header)),
		filters.Header{Key: ":path", Value: a.Upstream.Path},
		filters.Header{Key: ":authority", Value: p.Authority()},
		filters.Header{Key: "content-length", Value: strconv.Itoa(len(a.Upstream.Body))})
	if a.Upstream.Header.Get("accept-encoding") == "" {
		// The answer is read, so it must come uncompressed; most
		// translators say so themselves, and a header set twice costs
		// Envoy twice.
		set = append(set, filters.Header{Key: "accept-encoding", Value: "identity"})
	}
	return upstream{
		set:    append(set, a.Upstream.Header...),
		remove: keepTraceHeaders(lv.x, withheld(hdrs)),
	}, nil
}

// plannedAttempts is how many attempts Envoy may make for x: one per
// target of its plan, at most the route's attempts; a hedged request's
// two (its hedge and any failover share the one retry).
func plannedAttempts(x *filters.Exchange) int {
	if hedged(x) {
		return 2
	}
	return min(len(x.Plan), x.Route.Attempts)
}

// hedged reports whether x races its plan's first two targets.
func hedged(x *filters.Exchange) bool { return x.Hedge != nil && len(x.Plan) > 1 }

// attemptCluster is the cluster Envoy sends attempt a of x to: its
// provider's, or for a hedged request the composite cluster of its plan's
// first two targets (contract.HedgeCluster).
func attemptCluster(x *filters.Exchange, a *filters.Attempt) string {
	if hedged(x) {
		return contract.HedgeCluster(x.Plan[0].Provider().Name, x.Plan[1].Provider().Name)
	}
	return a.Target.Provider().Cluster
}

func (s *Server) responseHeaders(ctx context.Context, lv *live, h *extprocv3.HttpHeaders) *extprocv3.ProcessingResponse {
	x := lv.x
	hdrs := toHeaders(h.GetHeaders())
	x.Response.Status, _ = strconv.Atoi(hdrs.Get(":status"))
	x.Response.Header = hdrs
	if x.Route != nil && strings.Contains(hdrs.Get(contract.LocalReplyHeader), "URX") {
		// Envoy gave up after its last retry, so it made every planned
		// attempt. The retries' streams reach ext_proc on a connection of
		// their own (contract.ExtProcAttemptCluster) and may trail this
		// message; the answer must name the last of them.
		awaitAttempts(x, plannedAttempts(x), attemptWait)
	} else if n := localReplyAttempt(hdrs); x.Route != nil && n > 1 {
		// Envoy's reply after retries (the last attempt's provider had no
		// address, say) may overtake the earlier retries' streams too: the
		// answer names each of them, so they must be known first.
		awaitAttempts(x, n-1, attemptWait)
	}
	lv.lastByte = s.now()
	if hedged(x) && hdrs.Get(contract.LocalReplyHeader) == "" {
		s.settleHedge(ctx, lv, hdrs.Get(contract.AnsweredByHeader))
	}
	s.settleLast(ctx, lv, x.Response.Status, hdrs)
	if err := lv.chain.ResponseHeaders(ctx, x); err != nil {
		return s.reject(ctx, lv, err)
	}
	set, remove := x.TakeResponseMutations()
	set = append(set, filters.Header{Key: "x-request-id", Value: x.ID})
	remove = appendPresent(remove, hdrs, internalResponseHeaders)
	c := &extprocv3.CommonResponse{}
	resp := respHeadersResponse(c)
	if h.GetEndOfStream() {
		// A response without a body still gets a translated one.
		ch := &filters.Chunk{EOS: true}
		if err := lv.chain.ResponseChunk(ctx, x, ch); err != nil {
			return s.reject(ctx, lv, err)
		}
		lv.complete = true
		if len(ch.Data) > 0 {
			c.Status = extprocv3.CommonResponse_CONTINUE_AND_REPLACE
			c.BodyMutation = bodyMutation(ch.Data)
			set = append(set, filters.Header{Key: ":status", Value: strconv.Itoa(x.Response.Status)},
				filters.Header{Key: "content-length", Value: strconv.Itoa(len(ch.Data))})
		}
	} else if x.Response.Streaming {
		lv.streaming = true
		remove = appendPresent(remove, hdrs, contentLength)
		resp.ModeOverride = contract.StreamedResponseMode()
		// No attempt can follow a provider's stream: its request's body
		// is of no more use for as long as it streams, nor are the
		// response's headers, read by now, which alias the message they
		// came in.
		x.ReleaseRequest()
		x.Response.Header = nil
	}
	c.HeaderMutation = lv.sets.mutation(dropUnchanged(set, hdrs, nil, remove), remove)
	return resp
}

func (s *Server) responseBody(ctx context.Context, lv *live, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	x := lv.x
	before := x.Response.Status
	lv.lastByte = s.now()
	ch := &filters.Chunk{Data: b.GetBody(), EOS: b.GetEndOfStream()}
	if ch.EOS && !lv.streaming {
		if last := x.LastAttempt(); last != nil && last.N > 1 && last.Outcome().Failed() {
			// Every attempt may have failed: the 503 names each one's
			// failure, and the retried ones' come in Envoy's attempt log.
			s.awaitOutcomes(x, outcomeWait)
		}
	}
	if err := lv.chain.ResponseChunk(ctx, x, ch); err != nil {
		if !lv.streaming {
			return s.reject(ctx, lv, err)
		}
		// Headers are gone: the only way to report is an error event.
		e := filters.AsError(err, x.ID)
		lv.cause = e
		ch.Data = append(ch.Data, x.ErrorEvent(e)...)
	}
	lv.tracer.Observe(x, ch.Data, !lv.streaming)
	if ch.EOS {
		lv.complete = true
	} else if lv.streaming && lv.cause == nil && lv.lastByte.Sub(x.Started) >= x.Route.StreamTimeout {
		// The stream ran past its bound (a provider sending an event now
		// and then resets every idle timeout): the client gets what was
		// translated, then the error, and the stream ends
		// ([Server.processRequest]).
		err := s.providerTimedOut(ctx, lv, x.LastAttempt(), lv.lastByte, "answer not complete within the route's stream_timeout ("+x.Route.StreamTimeout.String()+")")
		e := filters.AsError(err, x.ID)
		lv.cause, lv.cut = e, true
		ch.Data = append(ch.Data, x.ErrorEvent(e)...)
	}
	c := &extprocv3.CommonResponse{}
	// A body the chain left as it came (a same-protocol answer naming the
	// model as the client did) goes on as Envoy holds it: sent back, it
	// would cost ext_proc a copy into the reply and Envoy another into
	// its buffer.
	if !bytes.Equal(ch.Data, b.GetBody()) {
		c.BodyMutation = bodyMutation(ch.Data)
	}
	if !lv.streaming {
		set, remove := x.TakeResponseMutations()
		set = append(set, filters.Header{Key: "content-length", Value: strconv.Itoa(len(ch.Data))})
		if x.Response.Status != before {
			set = append(set, filters.Header{Key: ":status", Value: strconv.Itoa(x.Response.Status)})
		}
		c.HeaderMutation = lv.sets.mutation(set, remove)
	}
	return respBodyResponse(c)
}

// reject ends the exchange with the OpenAI envelope of err and logs it
// once, here at the edge.
func (s *Server) reject(ctx context.Context, lv *live, err error) *extprocv3.ProcessingResponse {
	e := filters.AsError(err, lv.x.ID)
	lv.cause = e
	lv.x.Response.Status = e.Status
	level := slog.LevelInfo
	if e.Status >= 500 {
		level = slog.LevelError
	}
	s.log.LogAttrs(ctx, level, "request refused", slog.String("request_id", lv.x.ID), slog.Int("status", e.Status),
		slog.String("code", e.Code), slog.String("reason", errText(err, e)))
	return errorResponse(lv.x.ID, e, lv.x)
}

// errText is the log text of a refusal: the envelope's message, or for an
// internal failure the underlying error.
func errText(err error, e *openaiapi.Error) string {
	if e.Code == "internal_error" {
		return err.Error()
	}
	return e.Message
}

// attempt translates the request for one upstream attempt. It returns the
// attempt when the request goes out, so when it did can be recorded.
func (s *Server) attempt(ctx context.Context, h *extprocv3.HttpHeaders, attrs map[string]*structpb.Struct) (*extprocv3.ProcessingResponse, *filters.Attempt) {
	hdrs := toHeaders(h.GetHeaders())
	id := hdrs.Get("x-request-id")
	v, ok := s.exchanges.Load(id)
	if !ok {
		s.log.LogAttrs(ctx, slog.LevelError, "attempt for an unknown request; refusing to forward it", slog.String("request_id", id))
		return errorResponse(id, openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServer, "gateway_state_lost",
			"the gateway lost track of this request; retry it"), nil), nil
	}
	lv := v.(*live)
	x := lv.x
	n, cluster := attemptAttributes(attrs)
	a, ok := x.NewAttempt(n, s.now())
	if !ok || (cluster != "" && cluster != attemptCluster(x, a)) {
		// Envoy chose another cluster than the plan says for this attempt:
		// translating for either provider could send it the other's request.
		s.log.LogAttrs(ctx, slog.LevelError, "attempt does not match the plan; refusing to forward it", slog.String("request_id", id),
			slog.Int("attempt", n), slog.String("cluster", cluster))
		if a != nil {
			// The gateway's own refusal is no provider's outcome.
			a.Finish(filters.Outcome{Status: http.StatusInternalServerError})
		}
		return errorResponse(id, filters.AsError(errUntranslated, id), x), nil
	}
	if x.RequestReleased() {
		// Checked once the attempt is on the exchange's list, which keeps
		// the body from being let go while it is translated. Envoy makes
		// no attempt once an answer streams; one that came all the same
		// cannot be translated, and is never sent.
		s.log.LogAttrs(ctx, slog.LevelError, "attempt after the answer streamed; refusing to forward it", slog.String("request_id", id), slog.Int("attempt", a.N))
		a.Finish(filters.Outcome{Status: http.StatusInternalServerError})
		return errorResponse(id, filters.AsError(errUntranslated, id), x), nil
	}
	up, err := s.translated(ctx, lv, a, hdrs)
	if err != nil {
		e := filters.AsError(err, id)
		s.log.LogAttrs(ctx, slog.LevelInfo, "attempt refused", slog.String("request_id", id), slog.Int("attempt", a.N),
			slog.Int("status", e.Status), slog.String("code", e.Code), slog.String("reason", errText(err, e)))
		return errorResponse(id, e, x), nil
	}
	return headersResponse(&extprocv3.CommonResponse{
		Status:         extprocv3.CommonResponse_CONTINUE_AND_REPLACE,
		HeaderMutation: mutation(up.set, up.remove),
		BodyMutation:   bodyMutation(a.Upstream.Body),
	}), a
}

// withheld lists the client's headers a provider must not get.
func withheld(hdrs filters.Headers) []string {
	var out []string
	for _, h := range hdrs {
		if !translator.Forwarded(h.Key) {
			out = append(out, h.Key)
		}
	}
	return out
}

// attemptAttributes reads the attempt number (1-based) and cluster Envoy
// sent with the per-attempt stream.
func attemptAttributes(attrs map[string]*structpb.Struct) (n int, cluster string) {
	for _, st := range attrs {
		f := st.GetFields()
		if v, ok := f["upstream.request_attempt_count"]; ok {
			n = int(v.GetNumberValue())
			if s := v.GetStringValue(); s != "" {
				n, _ = strconv.Atoi(s)
			}
		}
		if v, ok := f["xds.cluster_name"]; ok {
			cluster = v.GetStringValue()
		}
	}
	return n, cluster
}

type untranslated struct{}

func (untranslated) Error() string { return "no filter translated the request for its provider" }

var errUntranslated error = untranslated{}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
