package filters

import (
	"context"
	"errors"
	"net/http"
	"sort"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/filters/filterspec"
)

// Filter is a stage of the chain. It implements any of the hook interfaces.
type Filter interface{ Name() string }

// RequestHeadersHook runs when the request headers arrive.
type RequestHeadersHook interface {
	RequestHeaders(ctx context.Context, x *Exchange) error
}

// RequestBodyHook runs when the whole request body has arrived.
type RequestBodyHook interface {
	RequestBody(ctx context.Context, x *Exchange) error
}

// AttemptHook runs at the start of every upstream attempt, on the
// per-attempt ext_proc stream, to prepare the request for that attempt's
// provider.
type AttemptHook interface {
	Attempt(ctx context.Context, x *Exchange, a *Attempt) error
}

// AttemptDoneHook runs when an attempt's outcome is known: its response
// headers arrived, or it ended without any.
type AttemptDoneHook interface {
	AttemptDone(ctx context.Context, x *Exchange, a *Attempt)
}

// ResponseHeadersHook runs when the response headers arrive.
type ResponseHeadersHook interface {
	ResponseHeaders(ctx context.Context, x *Exchange) error
}

// ResponseChunkHook runs for each piece of the response body (the whole
// body when it is buffered). It may replace c.Data.
type ResponseChunkHook interface {
	ResponseChunk(ctx context.Context, x *Exchange, c *Chunk) error
}

// CompleteHook runs once per answer that completes: when its last piece
// has passed every response-body hook, or when a filter answered the
// request itself, before it is released to the client. It sees what Done sees for a completed answer, except the
// outcomes of retried attempts, which Envoy reports later. It is for what
// must be on record before the client has its answer (the usage filter
// spools the request's record, in case the process dies before Done).
type CompleteHook interface {
	Complete(ctx context.Context, x *Exchange)
}

// RescueHook may answer a request that another filter refused on the
// request side (the router finding every provider down, say), whatever
// their order: it returns true after setting the reply with
// [Exchange.Respond], and the refusal is dropped.
type RescueHook interface {
	Rescue(ctx context.Context, x *Exchange, refusal error) bool
}

// DoneHook runs exactly once per exchange, for every filter of the chain,
// after everything else; cause is nil when the response completed.
type DoneHook interface {
	Done(ctx context.Context, x *Exchange, cause error)
}

// Chunk is a piece of the response body. A hook that changes it sets
// Data to new bytes, never writes into the ones it was given: a chunk
// whose bytes are the ones that came is passed on as Envoy holds it.
type Chunk struct {
	Data []byte
	EOS  bool
}

// Chain is the ordered filters of one route.
type Chain struct {
	filters  []Filter
	reqHdr   []RequestHeadersHook
	reqBody  []RequestBodyHook
	attempt  []AttemptHook
	attDone  []AttemptDoneHook
	respHdr  []ResponseHeadersHook // descending order
	respBody []ResponseChunkHook   // descending order
	complete []CompleteHook        // descending order
	done     []DoneHook            // descending order
	rescue   []RescueHook
}

// NewChain orders filters by the registry and indexes their hooks.
func NewChain(fs []Filter) *Chain {
	fs = append([]Filter(nil), fs...)
	sort.SliceStable(fs, func(i, j int) bool { return Order(fs[i].Name()) < Order(fs[j].Name()) })
	c := &Chain{filters: fs}
	for _, f := range fs {
		if h, ok := f.(RequestHeadersHook); ok {
			c.reqHdr = append(c.reqHdr, h)
		}
		if h, ok := f.(RequestBodyHook); ok {
			c.reqBody = append(c.reqBody, h)
		}
		if h, ok := f.(AttemptHook); ok {
			c.attempt = append(c.attempt, h)
		}
		if h, ok := f.(AttemptDoneHook); ok {
			c.attDone = append(c.attDone, h)
		}
		if h, ok := f.(RescueHook); ok {
			c.rescue = append(c.rescue, h)
		}
	}
	for i := len(fs) - 1; i >= 0; i-- {
		f := fs[i]
		if h, ok := f.(ResponseHeadersHook); ok {
			c.respHdr = append(c.respHdr, h)
		}
		if h, ok := f.(ResponseChunkHook); ok {
			c.respBody = append(c.respBody, h)
		}
		if h, ok := f.(CompleteHook); ok {
			c.complete = append(c.complete, h)
		}
		if h, ok := f.(DoneHook); ok {
			c.done = append(c.done, h)
		}
	}
	return c
}

// Names returns the filter names in request order.
func (c *Chain) Names() []string {
	names := make([]string, len(c.filters))
	for i, f := range c.filters {
		names[i] = f.Name()
	}
	return names
}

// NeedsBody reports whether any filter reads the request body.
func (c *Chain) NeedsBody() bool { return len(c.reqBody) > 0 }

// NeedsResponse reports whether any filter looks at the response.
func (c *Chain) NeedsResponse() bool { return len(c.respHdr)+len(c.respBody) > 0 }

// RequestHeaders runs the request-headers hooks in ascending order.
func (c *Chain) RequestHeaders(ctx context.Context, x *Exchange) error {
	for _, h := range c.reqHdr {
		start := x.Trace.clock()
		err := h.RequestHeaders(ctx, x)
		x.Trace.record(h, filterspec.PhaseRequestHeaders, 0, start, err)
		if err != nil || x.reply != nil {
			return err
		}
	}
	return nil
}

// RequestBody parses the body for the route's API, then runs the
// request-body hooks in ascending order.
func (c *Chain) RequestBody(ctx context.Context, x *Exchange) error {
	if err := parseBody(x); err != nil {
		return err
	}
	for _, h := range c.reqBody {
		start := x.Trace.clock()
		err := h.RequestBody(ctx, x)
		x.Trace.record(h, filterspec.PhaseRequestBody, 0, start, err)
		if err != nil || x.reply != nil {
			if err != nil && c.rescued(ctx, x, err) {
				return nil
			}
			return err
		}
	}
	return nil
}

func (c *Chain) rescued(ctx context.Context, x *Exchange, err error) bool {
	for _, h := range c.rescue {
		if h.Rescue(ctx, x, err) {
			return true
		}
	}
	return false
}

// Attempt runs the attempt hooks in ascending order.
func (c *Chain) Attempt(ctx context.Context, x *Exchange, a *Attempt) error {
	for _, h := range c.attempt {
		start := x.Trace.clock()
		err := h.Attempt(ctx, x, a)
		x.Trace.record(h, filterspec.PhaseAttempt, a.N, start, err)
		if err != nil {
			return err
		}
	}
	return nil
}

// AttemptDone runs the attempt-done hooks in ascending order.
func (c *Chain) AttemptDone(ctx context.Context, x *Exchange, a *Attempt) {
	for _, h := range c.attDone {
		h.AttemptDone(ctx, x, a)
	}
}

// ResponseHeaders runs the response-headers hooks in descending order.
func (c *Chain) ResponseHeaders(ctx context.Context, x *Exchange) error {
	for _, h := range c.respHdr {
		if err := h.ResponseHeaders(ctx, x); err != nil {
			return err
		}
	}
	return nil
}

// ResponseChunk runs the response-body hooks in descending order and,
// after the last chunk, the complete hooks.
func (c *Chain) ResponseChunk(ctx context.Context, x *Exchange, ch *Chunk) error {
	for _, h := range c.respBody {
		if err := h.ResponseChunk(ctx, x, ch); err != nil {
			return err
		}
	}
	if ch.EOS {
		c.Complete(ctx, x)
	}
	return nil
}

// Complete runs the complete hooks: after the last response chunk, or
// before a reply a filter made itself (a cache hit, say) is released.
func (c *Chain) Complete(ctx context.Context, x *Exchange) {
	for _, h := range c.complete {
		h.Complete(ctx, x)
	}
}

// Done runs every filter's Done hook in descending order. The server calls
// it exactly once per exchange.
func (c *Chain) Done(ctx context.Context, x *Exchange, cause error) {
	for _, h := range c.done {
		h.Done(ctx, x, cause)
	}
}

// Reject builds the refusal a hook returns to stop the request.
func Reject(status int, typ, code, format string, args ...any) *openaiapi.Error {
	return openaiapi.Errorf(status, typ, code, format, args...)
}

// AsError turns any hook error into the envelope the client gets: a
// refusal as it is, anything else as a 500 that names the request, so the
// cause can be found in the logs without leaking it.
func AsError(err error, requestID string) *openaiapi.Error {
	var oe *openaiapi.Error
	if errors.As(err, &oe) {
		return oe
	}
	return openaiapi.Errorf(http.StatusInternalServerError, openaiapi.TypeServer, "internal_error",
		"the gateway failed to process the request; quote request id %s", requestID)
}
