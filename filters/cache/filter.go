package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/cache/cachespec"
	"github.com/switchyard/switchyard/state/answercache"
)

func init() { filters.Register("cache", New) }

// Filter is the response cache of one route.
type Filter struct {
	args   cachespec.Args
	mem    *answercache.Memory
	shared *answercache.Shared
	log    *slog.Logger
	now    func() time.Time

	// pending holds each cacheable exchange's key, and its answer once
	// complete, from the request body to Done.
	pending sync.Map // *filters.Exchange → *lookup
	// writes bounds the Redis writes in flight; past it an answer is kept
	// in memory only.
	writes chan struct{}
}

type lookup struct {
	key    string
	answer *answercache.Entry
	// stream gathers a streamed answer as its client gets it, until it
	// passes the largest answer kept (tooLong).
	stream  []byte
	tooLong bool
}

// New builds the cache filter of a route.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	args, err := cachespec.Parse(ref)
	if err != nil {
		return nil, err
	}
	return newFilter(args, deps.Answers, deps.Log(), time.Now), nil
}

func newFilter(args cachespec.Args, shared *answercache.Shared, log *slog.Logger, now func() time.Time) *Filter {
	return &Filter{args: args, mem: answercache.NewMemory(args.MaxMemory), shared: shared, log: log, now: now, writes: make(chan struct{}, 64)}
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "cache" }

// lookupTimeout bounds the Redis read on the request path: a slow Redis
// makes a miss, not a slow request.
const lookupTimeout = 100 * time.Millisecond

// RequestBody implements [filters.RequestBodyHook]: a fresh answer is
// served at once; otherwise the request is marked a miss and its key kept.
func (f *Filter) RequestBody(ctx context.Context, x *filters.Exchange) error {
	key, ok := f.keyOf(x)
	if !ok {
		return nil
	}
	f.pending.Store(x, &lookup{key: key})
	now := f.now()
	memAge := f.args.MemoryTTL
	if f.shared == nil {
		memAge = f.args.TTL // memory is the only layer
	}
	if e, ok := f.mem.Get(key, now, memAge); ok {
		f.serve(x, e, "hit")
		return nil
	}
	if f.shared != nil {
		cctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		e, err := f.shared.Get(cctx, key)
		cancel()
		switch {
		case err == nil && now.Sub(e.Stored) <= f.args.TTL:
			f.mem.Put(key, e)
			f.serve(x, e, "hit")
			return nil
		case err != nil && !errors.Is(err, answercache.ErrMiss):
			f.log.WarnContext(ctx, "response cache: redis read failed, a miss", "request_id", x.ID, "error", err.Error())
		}
	}
	x.SetResponseHeader(filters.HeaderCache, "miss")
	return nil
}

// Rescue implements [filters.RescueHook]: when the router finds every
// provider down, a stale answer is served (degraded mode).
func (f *Filter) Rescue(ctx context.Context, x *filters.Exchange, refusal error) bool {
	var oe *openaiapi.Error
	if f.args.StaleFor == 0 || !errors.As(refusal, &oe) || oe.Status != http.StatusServiceUnavailable {
		return false
	}
	key, ok := f.keyOf(x)
	if !ok {
		return false
	}
	e, ok := f.stale(ctx, key)
	if !ok {
		return false
	}
	f.serve(x, e, "stale")
	return true
}

// ResponseChunk implements [filters.ResponseChunkHook]: a complete 200
// answer, whole or streamed, is kept for Done to store; a failure of every
// attempt is replaced by a stale answer when there is one.
func (f *Filter) ResponseChunk(ctx context.Context, x *filters.Exchange, c *filters.Chunk) error {
	v, ok := f.pending.Load(x)
	if !ok {
		return nil
	}
	l := v.(*lookup)
	if x.Response.Streaming {
		if x.Cached.How == "" {
			f.gather(x, l, c)
		}
		return nil
	}
	if !c.EOS {
		return nil
	}
	switch {
	case x.Response.Status == http.StatusOK && x.Cached.How == "" && x.Usage.Known && len(c.Data) <= cachespec.MaxAnswer:
		a := x.LastAttempt()
		if a == nil {
			return nil
		}
		l.answer = &answercache.Entry{Body: slices.Clone(c.Data), Model: a.Target.Model.Name,
			PromptTokens: x.Usage.PromptTokens, CompletionTokens: x.Usage.CompletionTokens, CostMicros: x.Usage.CostMicros}
	case x.Response.Status >= http.StatusInternalServerError && f.args.StaleFor > 0 && x.Cached.How == "":
		e, ok := f.stale(ctx, l.key)
		if !ok {
			return nil
		}
		body, ctype := f.render(x, e)
		c.Data = body
		x.Response.Status = http.StatusOK
		x.Response.Streaming = x.Chat.Stream
		x.SetResponseHeader("content-type", ctype)
		x.SetResponseHeader(filters.HeaderCache, "stale")
		x.SetResponseHeader(filters.HeaderDegraded, "true")
		x.SetResponseHeader(filters.HeaderModel, e.Model)
		x.RemoveResponseHeader(filters.HeaderProvider)
		f.account(x, e, "stale")
	}
	return nil
}

// gather adds a chunk of a streamed answer to what l holds and, at the
// stream's end, keeps the completion the chunks spell out: only of a whole
// 200 stream without an error event, whose provider counted its tokens.
func (f *Filter) gather(x *filters.Exchange, l *lookup, c *filters.Chunk) {
	if l.tooLong {
		return
	}
	if len(l.stream)+len(c.Data) > cachespec.MaxAnswer {
		l.stream, l.tooLong = nil, true
		return
	}
	l.stream = append(l.stream, c.Data...)
	if !c.EOS {
		return
	}
	stream := l.stream
	l.stream = nil
	a := x.LastAttempt()
	if a == nil || x.Response.Status != http.StatusOK || !x.Usage.Known || x.Usage.Estimated || x.Sent.ErrorType != "" {
		return
	}
	usage, _ := json.Marshal(openaiapi.Usage{PromptTokens: x.Usage.PromptTokens, CompletionTokens: x.Usage.CompletionTokens,
		TotalTokens: x.Usage.PromptTokens + x.Usage.CompletionTokens})
	body, ok := collect(stream, usage)
	if !ok {
		return
	}
	l.answer = &answercache.Entry{Body: body, Model: a.Target.Model.Name,
		PromptTokens: x.Usage.PromptTokens, CompletionTokens: x.Usage.CompletionTokens, CostMicros: x.Usage.CostMicros}
}

// Done implements [filters.DoneHook]: a complete answer goes to memory
// and, off the request path, to Redis.
func (f *Filter) Done(_ context.Context, x *filters.Exchange, cause error) {
	v, ok := f.pending.LoadAndDelete(x)
	if !ok || cause != nil {
		return
	}
	l := v.(*lookup)
	if l.answer == nil {
		return
	}
	e := *l.answer
	e.Stored = f.now()
	f.mem.Put(l.key, e)
	if f.shared == nil {
		return
	}
	select {
	case f.writes <- struct{}{}:
	default:
		return // Redis is slow: this answer stays in this replica's memory
	}
	go func() {
		defer func() { <-f.writes }()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := f.shared.Put(ctx, l.key, e, f.args.TTL+f.args.StaleFor); err != nil {
			f.log.Warn("response cache: redis write failed", "request_id", x.ID, "error", err.Error())
		}
	}()
}

// stale finds an answer up to stale_for past its ttl.
func (f *Filter) stale(ctx context.Context, key string) (answercache.Entry, bool) {
	maxAge := f.args.TTL + f.args.StaleFor
	if e, ok := f.mem.Get(key, f.now(), maxAge); ok {
		return e, true
	}
	if f.shared == nil {
		return answercache.Entry{}, false
	}
	cctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	e, err := f.shared.Get(cctx, key)
	return e, err == nil && f.now().Sub(e.Stored) <= maxAge
}

// serve answers x with e from the request side.
func (f *Filter) serve(x *filters.Exchange, e answercache.Entry, how string) {
	body, ctype := f.render(x, e)
	h := []filters.Header{{Key: "content-type", Value: ctype}, {Key: filters.HeaderCache, Value: how}, {Key: filters.HeaderModel, Value: e.Model}}
	if how == "stale" {
		h = append(h, filters.Header{Key: filters.HeaderDegraded, Value: "true"})
	}
	if x.Chat.Stream {
		h = append(h, filters.Header{Key: "cache-control", Value: "no-cache"})
	}
	x.Response.Streaming = x.Chat.Stream
	f.account(x, e, how)
	x.Respond(http.StatusOK, body, h...)
}

// account makes e the request's usage, at no provider cost. A hit saved
// what the answer cost when a provider made it; a degraded answer saved
// nothing, since no provider could have answered it.
func (f *Filter) account(x *filters.Exchange, e answercache.Entry, how string) {
	x.Usage = filters.Usage{Known: true, PromptTokens: e.PromptTokens, CompletionTokens: e.CompletionTokens}
	x.Cached = filters.Cached{How: how, Model: e.Model}
	if how == "hit" {
		x.Cached.SavedMicros = e.CostMicros
	}
	x.Sent.FirstToken, x.Sent.Complete = f.now(), true
}

// render is e as the client asked for it: the completion, or its SSE.
func (f *Filter) render(x *filters.Exchange, e answercache.Entry) ([]byte, string) {
	if !x.Chat.Stream {
		return e.Body, "application/json"
	}
	return sse(e.Body, x.Chat.IncludeUsage()), "text/event-stream; charset=utf-8"
}

// keyOf is the cache key of x, and whether x may be cached at all: a chat
// completion of a tenant the route caches for, asking for one answer,
// deterministic (temperature 0) unless the route caches everything or the
// client asks (x-switchyard-cache: on); x-switchyard-cache: off skips.
func (f *Filter) keyOf(x *filters.Exchange) (string, bool) {
	if x.Chat == nil || x.Route.API != policy.APIChatCompletions || x.Caller.Tenant == nil || x.Chat.Choices() > 1 {
		return "", false
	}
	if len(f.args.Tenants) > 0 && !slices.Contains(f.args.Tenants, x.Caller.Tenant.Name) {
		return "", false
	}
	switch x.Header.Get(filters.HeaderCache) {
	case "off":
		return "", false
	case "on":
	default:
		if f.args.DeterministicOnly && (x.Chat.Temperature == nil || *x.Chat.Temperature != 0) {
			return "", false
		}
	}
	norm, err := normalize(x.Body)
	if err != nil {
		return "", false
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(x.Caller.Tenant.Name), []byte(x.Route.Name), norm} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// transport are the request fields that change how an answer is delivered
// or who asked, not what it says.
var transport = []string{"stream", "stream_options", "user"}

// normalize is the request without its transport fields, with its keys
// sorted at every level (encoding/json sorts map keys): two requests that
// differ only in spacing, key order, streaming or end user share a key.
func normalize(body []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	for _, k := range transport {
		delete(m, k)
	}
	return json.Marshal(m)
}
