package server

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/filters"
)

// clientRouterHeaders are the request headers Envoy's router obeys for
// timeouts, retries and hedging. ext_proc sets the ones the gateway wants
// (x-envoy-max-retries, the answer timeout); a client's own would shorten
// an attempt's timeout and have a healthy provider blamed, or change what
// is retried. Envoy drops them itself only for requests it deems external,
// which depends on its internal-address configuration.
var clientRouterHeaders = []string{
	"x-envoy-upstream-rq-per-try-timeout-ms", "x-envoy-retry-on", "x-envoy-retry-grpc-on",
	"x-envoy-retriable-status-codes", "x-envoy-retriable-header-names", "x-envoy-hedge-on-per-try-timeout",
	"x-envoy-upstream-rq-timeout-alt-response", "x-envoy-expected-rq-timeout-ms", "x-envoy-upstream-stream-duration-ms",
}

// dropUnchanged removes from set the headers that hdrs, the headers Envoy
// holds, already has with that value, once: setting one costs Envoy as
// much as a change (a content-type the translation keeps, a path it does
// not change). A header an earlier reply touched, or that this one
// removes too (mutation keeps a header both set and removed), is kept.
func dropUnchanged(set []filters.Header, hdrs filters.Headers, touched, remove []string) []filters.Header {
	return slices.DeleteFunc(set, func(h filters.Header) bool {
		if slices.Contains(touched, h.Key) || slices.Contains(remove, h.Key) {
			return false
		}
		n, same := 0, false
		for _, g := range hdrs {
			if g.Key == h.Key {
				n, same = n+1, g.Value == h.Value
			}
		}
		return n == 1 && same
	})
}

// touchedBy names the headers a reply sets or removes.
func touchedBy(set []filters.Header, remove []string) []string {
	if len(set) == 0 {
		return remove
	}
	out := slices.Clip(remove)
	for _, h := range set {
		out = append(out, h.Key)
	}
	return out
}

// internalResponseHeaders are what Envoy tells ext_proc on a response
// (its own replies, a hedge's winner), never the client's to see.
var internalResponseHeaders = []string{contract.LocalReplyHeader, contract.LocalReplyFailureHeader, contract.LocalReplyAttemptHeader, contract.AnsweredByHeader}

var contentLength = []string{"content-length"}

// appendPresent appends those of names that hdrs has: each removal Envoy
// is sent costs it a search of the message's headers, found or not.
func appendPresent(remove []string, hdrs filters.Headers, names []string) []string {
	for _, n := range names {
		if hdrs.Has(n) {
			remove = append(remove, n)
		}
	}
	return remove
}

// toHeaders reads the headers of a message from Envoy. The values alias
// the message's own bytes, which nothing writes to once it is received.
func toHeaders(m *corev3.HeaderMap) filters.Headers {
	hs := make(filters.Headers, 0, len(m.GetHeaders()))
	for _, h := range m.GetHeaders() {
		v := h.GetValue()
		if raw := h.GetRawValue(); v == "" && len(raw) > 0 {
			v = unsafe.String(unsafe.SliceData(raw), len(raw))
		}
		hs = append(hs, filters.Header{Key: h.GetKey(), Value: v})
	}
	return hs
}

// mutation builds a header mutation from lists of sets and removals. A
// header both set and removed is only set, so the outcome does not depend
// on the order in which Envoy applies the two lists. The set headers are
// allocated together: a reply sets a dozen.
func mutation(set []filters.Header, remove []string) *extprocv3.HeaderMutation {
	return (*headerSets)(nil).mutation(set, remove)
}

// headerSets is the room a reply's header mutation is built in, reused
// for the next reply once that one is sent: each set header is two
// protobuf messages, 3.6 KB a request built and dropped. A request's
// replies take one from headerSetsPool ([live]), a per-attempt reply
// another; nil allocates afresh.
type headerSets struct {
	m      extprocv3.HeaderMutation
	opts   []corev3.HeaderValueOption
	vals   []corev3.HeaderValue
	ptrs   []*corev3.HeaderValueOption
	remove []string
}

var headerSetsPool = sync.Pool{New: func() any { return new(headerSets) }}

// release gives h back once the last reply built in it is sent. Nil does
// nothing.
func (h *headerSets) release() {
	if h == nil {
		return
	}
	clear(h.vals) // let the strings go
	clear(h.remove)
	headerSetsPool.Put(h)
}

// mutation is [mutation] built in h, which it overwrites: the reply of the
// mutation h built before must have been sent.
func (h *headerSets) mutation(set []filters.Header, remove []string) *extprocv3.HeaderMutation {
	if len(set) == 0 && len(remove) == 0 {
		return nil
	}
	if h == nil {
		h = &headerSets{}
	}
	h.m.Reset()
	m := &h.m
	h.remove = h.remove[:0]
	for _, k := range remove {
		if !slices.ContainsFunc(set, func(h filters.Header) bool { return h.Key == k }) {
			h.remove = append(h.remove, k)
		}
	}
	if len(h.remove) > 0 {
		m.RemoveHeaders = h.remove
	}
	if len(set) > 0 {
		if cap(h.opts) < len(set) {
			h.opts = make([]corev3.HeaderValueOption, len(set))
			h.vals = make([]corev3.HeaderValue, len(set))
			h.ptrs = make([]*corev3.HeaderValueOption, len(set))
		}
		opts, vals := h.opts[:len(set)], h.vals[:len(set)]
		m.SetHeaders = h.ptrs[:len(set)]
		for i, hd := range set {
			vals[i].Reset()
			vals[i].Key, vals[i].RawValue = hd.Key, bytesOf(hd.Value)
			opts[i].Reset()
			opts[i].Header, opts[i].AppendAction = &vals[i], corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
			m.SetHeaders[i] = &opts[i]
		}
	}
	return m
}

// bytesOf is s's bytes without a copy, for a message field that is only
// ever marshalled.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// errorResponse answers the client with the error envelope of the
// exchange's API; x is nil for a request that matched no route.
func errorResponse(requestID string, e *openaiapi.Error, x *filters.Exchange) *extprocv3.ProcessingResponse {
	set := []filters.Header{{Key: "content-type", Value: "application/json"}, {Key: "x-request-id", Value: requestID}}
	for k, v := range e.Headers {
		set = append(set, filters.Header{Key: k, Value: v})
	}
	return immediate(e.Status, set, x.ErrorBody(e), e.Code)
}

// replyResponse answers with a reply made by a filter.
func replyResponse(requestID string, r *filters.Reply) *extprocv3.ProcessingResponse {
	set := append([]filters.Header{{Key: "content-type", Value: "application/json"}, {Key: "x-request-id", Value: requestID}}, r.Header...)
	return immediate(r.Status, set, r.Body, "switchyard_reply")
}

func immediate(status int, set []filters.Header, body []byte, details string) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{
		Status:  &typev3.HttpStatus{Code: typev3.StatusCode(status)},
		Headers: mutation(set, nil),
		Body:    body,
		Details: details,
	}}}
}

// planMetadata names the providers to try, in order, for Envoy's
// priority-group cluster specifier (group i is the provider of attempt
// i), the cluster the first attempt was translated for, and whether the
// client speaks Anthropic's API, for the envelope of Envoy's own replies.
// The namespace's value comes from plans, made once for each plan: only
// the outer struct is the request's own, for annotate to add to.
func planMetadata(plans *planCache, x *filters.Exchange, translatedFor string) *structpb.Struct {
	names := make([]string, len(x.Plan))
	for i, t := range x.Plan {
		names[i] = t.Provider().Name
	}
	if hedged(x) {
		// Both attempts through the pair's composite cluster: the first
		// group serves the first attempt and a hedge (Envoy does not pick
		// the cluster again for a hedge), the second a failover.
		pair := contract.HedgeCluster(names[0], names[1])
		names, translatedFor = []string{pair, pair}, pair
	}
	anthropic := x.SpeaksAnthropic()
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		contract.RouteMetadataNamespace: plans.get(names, translatedFor, anthropic),
	}}
}

// planCache keeps the route metadata of the plans made, which are few (a
// route's providers in a handful of orders), read-only once made: the
// structs cost a dozen allocations a request to make. Past maxPlans it
// starts again, so plans of policies gone do not pile up.
type planCache struct {
	m sync.Map // key → *structpb.Value
	n atomic.Int64
}

const maxPlans = 4096

func (c *planCache) get(names []string, translatedFor string, anthropic bool) *structpb.Value {
	var b strings.Builder
	b.Grow(len(translatedFor) + 2 + 16*len(names))
	b.WriteString(translatedFor)
	if anthropic {
		b.WriteString("\x00a")
	}
	for _, n := range names {
		b.WriteByte(0x01)
		b.WriteString(n)
	}
	key := b.String()
	if v, ok := c.m.Load(key); ok {
		return v.(*structpb.Value)
	}
	groups := make([]*structpb.Value, len(names))
	for i, n := range names {
		groups[i] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"name": structpb.NewStringValue(n)}})
	}
	route := map[string]*structpb.Value{
		contract.PriorityGroupsKey: structpb.NewListValue(&structpb.ListValue{Values: groups}),
		contract.TranslatedForKey:  structpb.NewStringValue(translatedFor),
	}
	if anthropic {
		route[contract.ClientAPIKey] = structpb.NewStringValue(contract.ClientAnthropic)
	}
	v := structpb.NewStructValue(&structpb.Struct{Fields: route})
	if c.n.Add(1) > maxPlans {
		c.m.Clear()
		c.n.Store(1)
	}
	actual, _ := c.m.LoadOrStore(key, v)
	return actual.(*structpb.Value)
}

func headersResponse(c *extprocv3.CommonResponse) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: c}}}
}

func bodyResponse(c *extprocv3.CommonResponse) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: c}}}
}

func respHeadersResponse(c *extprocv3.CommonResponse) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{Response: c}}}
}

func respBodyResponse(c *extprocv3.CommonResponse) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: c}}}
}

func bodyMutation(b []byte) *extprocv3.BodyMutation {
	if b == nil {
		b = []byte{}
	}
	return &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: b}}
}
