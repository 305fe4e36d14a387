package filters

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/translator"
)

// Exchange is one client request on its way through the chain.
//
// The router-level ext_proc stream owns it; the per-attempt (upstream)
// streams of the same request reach it by request ID and touch only the
// attempt list, which is guarded by a mutex because those streams run on
// other goroutines.
type Exchange struct {
	ID      string
	Started time.Time
	Policy  *policy.Policy
	Route   *policy.Route

	Method string
	Path   string // without the query string
	Query  string
	Header Headers
	// Body is the request body on its way to the provider: as the client
	// sent it, unless a step rewrote it ([Exchange.ReplaceBody]).
	Body []byte

	// Chat is the parsed body of a chat completion request.
	Chat *openaiapi.ChatRequest
	// FitPrompt is the prompt's estimated tokens on a route that fits the
	// output cap to the context window (fit_output_to_context), taken
	// when the body is parsed: the budget reservation and every attempt's
	// output cap are fitted to this one figure. 0 on other routes.
	FitPrompt int
	// Embeddings is the parsed body of an embeddings request.
	Embeddings *openaiapi.EmbeddingsRequest

	// Caller is who is calling, set by auth.
	Caller Caller
	// Labels are the request's tags and session, set by auth and
	// completed from the body where the route takes its metadata.
	Labels Labels
	// Redaction is what was masked of the request before it reached a
	// provider; nil when its route and tenant redact nothing.
	Redaction *Redaction
	// Plan is the ordered list of targets chosen by the router: attempt n
	// (1-based) uses Plan[min(n, len(Plan))-1].
	Plan []Target
	// Hedge, when set, has the plan's first two targets raced: the second
	// starts when the first has not answered within Hedge.After, and the
	// first answer wins (set by the router on a route that hedges; quota
	// drops it when the budget cannot cover both).
	Hedge *Hedge
	// Hybrid, when set, sends the request to every target of the plan at
	// once and keeps one answer (the route's hybrid mode): set by the
	// router, carried out by the server, which makes each target's call an
	// attempt.
	Hybrid *Hybrid
	// RouteReason says in a few words why the plan is what it is.
	RouteReason string
	// Routing is what else the router learnt about the request.
	Routing Routing
	// Pressure is the cost governor's verdict on the caller's budget (set
	// by quota before routing): 0 none, 1 expensive models lose weight,
	// 2 cheap models only.
	Pressure int

	// Response is what came back, filled by the server before response hooks.
	Response Response
	// Usage is the accounting of the answer, filled by the translate filter.
	Usage Usage
	// Sent is what the client has been sent of the answer, kept by the
	// translate filter.
	Sent Sent
	// Cached is set when the response cache answered instead of a
	// provider.
	Cached Cached
	// Trace is what the request's trace will show; nil when tracing is off.
	Trace *Trace

	mu       sync.Mutex
	attempts []*Attempt
	// answered is the number of the attempt whose answer the client gets,
	// once the server knows it was not the most recent (a hedge's winner);
	// 0 otherwise.
	answered int

	// clientBody is the body as the client sent it, once a step replaced
	// Body.
	clientBody []byte
	// released is set once the request's bodies were let go
	// ([Exchange.ReleaseRequest]), and clientSum is then what is kept of
	// the client's: its SHA-256, hex.
	released  bool
	clientSum string

	reqSet, respSet       []Header
	reqRemove, respRemove []string
	reply                 *Reply
}

// RequestedModel is the model the client named, "" before the body.
func (x *Exchange) RequestedModel() string {
	switch {
	case x.Chat != nil:
		return x.Chat.Model
	case x.Embeddings != nil:
		return x.Embeddings.Model
	}
	return ""
}

// ReplaceBody rewrites the body that goes on to the provider (tags taken
// out of its metadata, sensitive data masked); [Exchange.ClientBody]
// keeps the client's.
func (x *Exchange) ReplaceBody(b []byte) {
	if x.clientBody == nil {
		x.clientBody = x.Body
	}
	x.Body = b
}

// ClientBody is the request body as the client sent it, whatever a step
// rewrote; nil once released ([Exchange.ReleaseRequest]).
func (x *Exchange) ClientBody() []byte {
	if x.clientBody != nil {
		return x.clientBody
	}
	return x.Body
}

// ClientBodySHA256 is the SHA-256 (hex) of the body as the client sent
// it, what the audit trail keeps of it; "" for an empty body.
func (x *Exchange) ClientBodySHA256() string {
	if x.released {
		return x.clientSum
	}
	b := x.ClientBody()
	if len(b) == 0 {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ReleaseRequest lets go of the request's body, the client's and the one
// rewritten for providers, once the answer streams: the request's stream
// calls it when the response headers of a streamed answer arrive. A
// stream lasts seconds to minutes, and a body (100 KB from a coding
// agent) would otherwise stay for all of it, next to its parsed form.
//
// It is safe because the body is read only to translate an attempt, and
// no attempt can follow: Envoy decides retries and hedges before a
// response's headers reach the router-level filter, and the headers of a
// streamed answer come from a provider, so none of its attempts is left
// to make. What is read later stays: the parsed request (Chat, read for
// the estimate of a stream cut short, a judge's sampling, a captured
// prompt) and the client's body's hash (the audit trail's).
//
// An attempt still being translated (a hedge's loser, which Envoy is
// cancelling) may be reading the body: then it is kept, and this reports
// false. Once released, the body is nil and [Exchange.RequestReleased]
// says so, for any attempt that would still come to be translated.
func (x *Exchange) ReleaseRequest() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.released {
		return true
	}
	for _, a := range x.attempts {
		// Sent or settled under the attempt's lock, which orders the
		// attempt's own reads of the body before this.
		if a.SentAt().IsZero() && !a.Outcome().Done {
			return false
		}
	}
	x.clientSum = x.ClientBodySHA256()
	x.Body, x.clientBody, x.released = nil, nil, true
	return true
}

// RequestReleased reports whether the request's body was let go
// ([Exchange.ReleaseRequest]): an attempt cannot be translated any more.
func (x *Exchange) RequestReleased() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.released
}

// Caller identifies the authenticated client.
type Caller struct {
	Tenant  *policy.Tenant
	Key     *policy.Key
	KeyName string
	App     string
}

// Routing is the router's view of a request, for logs, metrics and records.
type Routing struct {
	// Split names the A/B arm when a traffic split applied.
	Split string
	// Level and Score are the request's complexity, when computed.
	Level string
	Score float64
	// Substituted is "retired -> successor" when the model the client
	// named was retired and its successor served instead.
	Substituted string
	// Domain is the request's domain on a route that learns domain
	// priors (nil elsewhere), for the verdicts on its answer.
	Domain *priors.Domain
}

// Target is a model and the provider serving it.
type Target struct {
	Model *policy.Model
}

// Provider returns the target's provider.
func (t Target) Provider() *policy.Provider { return t.Model.Provider }

// Hedge is a request's hedge: when its second attempt starts.
type Hedge struct {
	After time.Duration
}

// Hybrid is a request's hybrid mode: how one answer is picked among its
// targets', and once the server has run it, which was and what the
// picking cost.
type Hybrid struct {
	Pick  policy.HybridPick
	Judge *policy.Model
	// Picked is the number of the attempt whose answer was kept; 0 when
	// none was acceptable.
	Picked int
	// Judged is the number of the judge's own attempt, 0 when it was not
	// called; JudgeMicros is what its call cost, part of the request's
	// cost.
	Judged      int
	JudgeMicros int64
}

// Attempt is one try of the request on one provider.
type Attempt struct {
	N       int
	Target  Target
	Started time.Time
	// Sent is when ext_proc handed the translated request to Envoy for the
	// provider; zero while it has not. The provider is timed from here, so
	// time the request spent in the gateway is never counted against it.
	Sent       time.Time
	Translator translator.Translator
	// Upstream is the translated request for this attempt; its body is
	// let go once sent ([Attempt.MarkSent]).
	Upstream translator.Upstream

	// The attempt's own stream records the outcome while the request's
	// stream may read it (a client that leaves cancels both at once).
	mu      sync.Mutex
	outcome Outcome
}

// MarkSent records when ext_proc handed the attempt's translated request
// to Envoy (the first time only), and lets go of the translated body:
// Envoy holds it now, nothing reads it again (a retry is translated
// afresh from the client's request), and an answer may take minutes. The
// request's stream marks it while the access-log stream may read it
// (SentAt), hence the attempt's lock.
func (a *Attempt) MarkSent(at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Sent.IsZero() {
		a.Sent = at
	}
	a.Upstream.Body = nil
}

// SentAt is [Attempt.Sent], read under the attempt's lock.
func (a *Attempt) SentAt() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.Sent
}

// Outcome is what the provider answered, once known.
func (a *Attempt) Outcome() Outcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.outcome
}

// Finish records how the attempt ended, marking o done, unless an outcome
// was recorded already; it reports whether o was recorded.
func (a *Attempt) Finish(o Outcome) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.outcome.Done {
		return false
	}
	o.Done = true
	o.Quota = health.QuotaFromHeaders(o.Header.Get)
	a.outcome = o
	return true
}

// ReleaseHeader lets go of the provider's response headers once the
// AttemptDone hooks have read them: a streamed answer may last minutes,
// and the headers alias the whole message Envoy sent them in.
func (a *Attempt) ReleaseHeader() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.outcome.Header = nil
}

// Amend changes the recorded outcome, as when the blame for a missing
// response is settled after the fact.
func (a *Attempt) Amend(f func(o *Outcome)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(&a.outcome)
}

// Outcome is how one attempt ended, as far as the gateway can see before
// the response body: the provider's status and headers, or no response.
type Outcome struct {
	Done bool
	// Status is the provider's HTTP status; 0 when none arrived.
	Status int
	// Failure says why no response arrived (connect failure, reset,
	// timeout), when Status is 0.
	Failure string
	// Cause says whose doing a missing response was, when Status is 0.
	Cause Cause
	// Latency is from the request reaching the provider (the attempt's
	// start when it never did) to its response headers or failure.
	Latency time.Duration
	// Header is the provider's response headers, for the AttemptDone
	// hooks ([Attempt.ReleaseHeader]).
	Header Headers
	// Quota is what the provider's rate-limit headers say is left of its
	// quota, a fraction (health.QuotaFromHeaders); -1 when they say
	// nothing. It outlives Header.
	Quota float64
}

// Cause is whose doing an attempt without a response was. Only the
// provider's own failures may count against its health and breakers.
type Cause int

const (
	// CauseNone: a response arrived, its status tells.
	CauseNone Cause = iota
	// CauseConnect: the provider refused or reset the connection, or it
	// closed before the response headers.
	CauseConnect
	// CauseTimeout: the provider sent no first byte within the per-try
	// timeout, counted from when the request reached it.
	CauseTimeout
	// CauseExcused: not the provider's doing: the client went away, Envoy
	// refused locally (overflow, queueing), or the gateway itself was late.
	CauseExcused
	// CauseNoAddress: the provider's name resolved to no address, so no
	// connection was tried (and Envoy tries no other provider after it).
	CauseNoAddress
	// CauseHedged: the attempt lost a hedge; the gateway cancelled it when
	// another attempt of the request answered first. Not the provider's
	// doing, though it may bill for it.
	CauseHedged
)

// Failed reports whether the attempt failed in a way another provider
// might not: no response, a 5xx, or a rate limit.
func (o Outcome) Failed() bool {
	return o.Done && (o.Status == 0 || o.Status >= 500 || o.Status == 429)
}

// Response is the upstream response as the chain sees it.
type Response struct {
	Status    int
	Header    Headers
	Streaming bool
}

// Usage is the token and money accounting of one request.
type Usage struct {
	Known            bool
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int
	// CacheWriteTokens and CacheWrite1hTokens are the prompt tokens the
	// provider wrote to its prompt cache for its default lifetime and for
	// an hour; like CachedTokens, part of PromptTokens at a rate of their
	// own.
	CacheWriteTokens   int
	CacheWrite1hTokens int
	// WebSearches are the searches the provider ran for the answer, each
	// billed apart from tokens.
	WebSearches int
	CostMicros  int64
	// HedgedMicros is the part of CostMicros charged for the attempts a
	// hedge's winner beat, estimated: the gateway cancelled them before
	// they answered, and their provider may bill them all the same.
	HedgedMicros int64
	// Estimated is set when the provider's own count never arrived (a
	// stream cut short) and the gateway counted instead.
	Estimated bool
}

// Tokens are the counts u is priced by.
func (u Usage) Tokens() policy.Tokens {
	return policy.Tokens{Prompt: u.PromptTokens, Completion: u.CompletionTokens, CacheRead: u.CachedTokens,
		CacheWrite: u.CacheWriteTokens, CacheWrite1h: u.CacheWrite1hTokens}
}

// Sent is what the client has been sent of an answer so far. A stream cut
// short is accounted from it.
type Sent struct {
	// FirstToken is when the first generated content left for the client;
	// zero when none did.
	FirstToken time.Time
	// Text is the generated text streamed so far: content, refusals and
	// tool-call arguments.
	Text []byte
	// Complete is set once the answer's last byte went out.
	Complete bool
	// ErrorType is the OpenAI error type of an error event that ended a
	// stream after its headers were sent.
	ErrorType string
}

// Cached says how the response cache answered: How is "hit" (a fresh
// answer, no provider asked) or "stale" (degraded mode: every attempt
// failed), and Model the model that made the answer. SavedMicros is what
// a hit saved: the provider's price of the answer when it was made.
type Cached struct {
	How         string
	Model       string
	SavedMicros int64
}

// Reply is a complete answer made by a filter instead of a provider.
type Reply struct {
	Status int
	Header []Header
	Body   []byte
}

// NewAttempt records the start of attempt n (1-based, as Envoy numbers
// them; 0 means the next one) and returns it. Attempts past the end of the
// plan reuse its last target, as Envoy's priority groups do.
func (x *Exchange) NewAttempt(n int, now time.Time) (*Attempt, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.Plan) == 0 {
		return nil, false
	}
	if n <= 0 {
		n = len(x.attempts) + 1
	}
	// One request per attempt number: a second would be a stream this
	// exchange never planned (an attempt translated on the router level
	// that Envoy sent through the per-attempt filter anyway).
	if slices.ContainsFunc(x.attempts, func(a *Attempt) bool { return a.N == n }) {
		return nil, false
	}
	a := &Attempt{N: n, Target: x.Plan[min(n, len(x.Plan))-1], Started: now}
	// Streams of successive attempts may reach ext_proc out of order, so
	// the list is kept sorted by attempt number.
	i := len(x.attempts)
	for i > 0 && x.attempts[i-1].N > n {
		i--
	}
	x.attempts = slices.Insert(x.attempts, i, a)
	return a, true
}

// LastAttempt returns the attempt the answer comes from: a hedge's winner
// once the server named it ([Exchange.SetAnswered]), else the most recent
// attempt; nil if none started.
func (x *Exchange) LastAttempt() *Attempt {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.attempts) == 0 {
		return nil
	}
	for _, a := range x.attempts {
		if a.N == x.answered {
			return a
		}
	}
	return x.attempts[len(x.attempts)-1]
}

// SetAnswered names attempt n as the one whose answer the client gets:
// with a hedge, an earlier attempt may answer after a later one started.
func (x *Exchange) SetAnswered(n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.answered = n
}

// Hedged returns the attempts a hedge's winner beat: every attempt of a
// hedged request other than the answering one that has no outcome yet.
func (x *Exchange) Hedged() []*Attempt {
	if x.Hedge == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*Attempt
	for _, a := range x.attempts {
		if a.N != x.answered && !a.Outcome().Done {
			out = append(out, a)
		}
	}
	return out
}

// AttemptCount is the number of the last attempt started: attempts whose
// stream never reached ext_proc (a connection refused at once) count too.
func (x *Exchange) AttemptCount() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.attempts) == 0 {
		return 0
	}
	return x.attempts[len(x.attempts)-1].N
}

// Unsettled returns the attempts whose outcome is not known yet.
func (x *Exchange) Unsettled() []*Attempt {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []*Attempt
	for _, a := range x.attempts {
		if !a.Outcome().Done {
			out = append(out, a)
		}
	}
	return out
}

// Attempts returns a copy of the attempt list, in attempt order.
func (x *Exchange) Attempts() []*Attempt {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]*Attempt(nil), x.attempts...)
}

// SetRequestHeader sets a header on the request sent upstream.
func (x *Exchange) SetRequestHeader(k, v string) {
	x.reqSet = append(x.reqSet, Header{Key: k, Value: v})
}

// RemoveRequestHeader removes a header from the request sent upstream. A
// header the client did not send is left alone: each removal costs Envoy
// a search of the request's headers, found or not (about 1,500
// instructions).
func (x *Exchange) RemoveRequestHeader(k string) {
	if x.Header.Has(k) {
		x.reqRemove = append(x.reqRemove, k)
	}
}

// SetResponseHeader sets a header on the response sent to the client.
func (x *Exchange) SetResponseHeader(k, v string) {
	x.respSet = append(x.respSet, Header{Key: k, Value: v})
}

// RemoveResponseHeader removes a header from the response to the client.
func (x *Exchange) RemoveResponseHeader(k string) { x.respRemove = append(x.respRemove, k) }

// Respond answers the request from the gateway itself; the chain stops.
func (x *Exchange) Respond(status int, body []byte, header ...Header) {
	x.reply = &Reply{Status: status, Body: body, Header: header}
}

// TakeReply returns and clears the pending reply, if any.
func (x *Exchange) TakeReply() *Reply {
	r := x.reply
	x.reply = nil
	return r
}

// TakeRequestMutations returns and clears pending request header changes.
func (x *Exchange) TakeRequestMutations() (set []Header, remove []string) {
	set, remove = x.reqSet, x.reqRemove
	x.reqSet, x.reqRemove = nil, nil
	return set, remove
}

// TakeResponseMutations returns and clears pending response header changes.
func (x *Exchange) TakeResponseMutations() (set []Header, remove []string) {
	set, remove = x.respSet, x.respRemove
	x.respSet, x.respRemove = nil, nil
	return set, remove
}

// Header is one HTTP header; keys are lower case, as Envoy sends them.
type Header = translator.Header

// Headers is a header list with lower-case keys.
type Headers = translator.Headers

// BearerToken returns the token of an "Authorization: Bearer" header.
func BearerToken(h Headers) string { return Bearer(h.Get("authorization")) }

// Bearer returns the token of an Authorization value "Bearer <token>", ""
// for any other value.
func Bearer(v string) string {
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}
