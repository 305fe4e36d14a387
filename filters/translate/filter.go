package translate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/translator"
)

func init() { filters.Register("translate", New) }

// Filter translates requests per attempt and responses of the last attempt.
type Filter struct {
	pools map[string]*keyPool // provider → its keys
	used  sync.Map            // *filters.Attempt → keyUse, until AttemptDone
	log   *slog.Logger
	// now stamps the first token the client is sent.
	now func() time.Time
}

// New builds the translate filter, resolving every provider key once.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	if err := filterspec.NoArgs(ref); err != nil {
		return nil, err
	}
	f := &Filter{pools: map[string]*keyPool{}, now: time.Now, log: deps.Logger}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	var errs []error // every provider's, so an operator fixes them in one go
	for _, p := range deps.Policy.Providers {
		if translators[p.Kind] == nil {
			errs = append(errs, fmt.Errorf("provider %s: kind %s has no translator yet", p.Name, p.Kind))
			continue
		}
		if deps.Secrets == nil {
			continue
		}
		pool, err := newKeyPool(p, deps.Secrets, restingKeys, time.Now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.pools[p.Name] = pool
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "translate" }

// Attempt implements [filters.AttemptHook]. A refused attempt is never
// sent, so no AttemptDone comes for it: the key it picked is let go here.
func (f *Filter) Attempt(_ context.Context, x *filters.Exchange, a *filters.Attempt) error {
	err := f.translate(x, a)
	if err != nil {
		f.used.Delete(a)
	}
	return err
}

func (f *Filter) translate(x *filters.Exchange, a *filters.Attempt) error {
	p := a.Target.Provider()
	t := translator.Target{
		Provider:    p,
		Model:       a.Target.Model,
		ClientModel: x.RequestedModel(),
		Key:         f.key(a),
		Header:      x.Header,
		ID:          "chatcmpl-" + strings.ReplaceAll(x.ID, "-", ""),
		Created:     x.Started.Unix(),
		FitPrompt:   x.FitPrompt,
	}
	tr := For(x.Route.API, t)
	if tr == nil {
		return filters.Reject(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_capability",
			"provider kind %s does not serve %s", p.Kind, x.Route.API)
	}
	var (
		up  translator.Upstream
		err *openaiapi.Error
	)
	switch {
	case x.Chat != nil:
		up, err = tr.Request(x.Chat, x.Body)
	case x.Embeddings != nil:
		e, ok := tr.(translator.Embedder)
		if !ok {
			return filters.Reject(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_capability",
				"provider kind %s has no embeddings API", p.Kind)
		}
		up, err = e.EmbeddingsRequest(x.Embeddings, x.Body)
	default:
		return filters.Reject(http.StatusNotFound, openaiapi.TypeInvalidRequest, "unknown_url", "this path serves no model API")
	}
	if err != nil {
		return err
	}
	a.Translator, a.Upstream = tr, up
	return nil
}

// RequestBody implements [filters.RequestBodyHook]: what no provider may
// see leaves the body before the first attempt is translated. The tags a
// route takes from the body's metadata are the gateway's, kept from every
// provider; the sensitive data the route or tenant redacts is masked
// (after routing and the budget reservation, which see the request as it
// came). A token count goes only to providers that count (Anthropic's
// count_tokens); when the plan holds none, the gateway answers with its
// own estimate, and says so in x-switchyard-token-count.
func (f *Filter) RequestBody(ctx context.Context, x *filters.Exchange) error {
	if err := x.DropMetadataTags(); err != nil {
		return err
	}
	if err := x.RedactBody(ctx); err != nil {
		return err
	}
	if x.Route.API != policy.APICountTokens {
		return nil
	}
	x.Plan = slices.DeleteFunc(x.Plan, func(t filters.Target) bool { return !Counts(t.Provider().Kind) })
	if len(x.Plan) > 0 {
		return nil
	}
	body, _ := json.Marshal(anthropicapi.TokenCount{InputTokens: openaiapi.EstimatePromptTokens(x.Chat)})
	x.Respond(http.StatusOK, body, filters.Header{Key: "x-switchyard-token-count", Value: "estimated"})
	return nil
}

// keptResponseHeaders are the provider headers a client may see; the rest
// would show which provider served, or mislead (lengths, encodings).
var keptResponseHeaders = map[string]bool{
	"content-type": true, "retry-after": true, "retry-after-ms": true, "date": true,
}

// ResponseHeaders implements [filters.ResponseHeadersHook].
func (f *Filter) ResponseHeaders(_ context.Context, x *filters.Exchange) error {
	a := x.LastAttempt()
	if a == nil || a.Translator == nil {
		return nil // Envoy's own local reply; its formatter already speaks OpenAI
	}
	x.Response.Streaming = x.Chat != nil && a.Translator.IsStream(x.Response.Status, x.Response.Header)
	for _, h := range x.Response.Header {
		if !keptResponseHeaders[h.Key] && !strings.HasPrefix(h.Key, ":") && !strings.HasPrefix(h.Key, "x-switchyard-") {
			x.RemoveResponseHeader(h.Key)
		}
	}
	x.SetResponseHeader(filters.HeaderModel, a.Target.Model.Name)
	x.SetResponseHeader(filters.HeaderProvider, a.Target.Provider().Name)
	if x.Response.Streaming {
		x.SetResponseHeader("content-type", "text/event-stream; charset=utf-8")
		x.SetResponseHeader("cache-control", "no-cache")
	} else {
		x.SetResponseHeader("content-type", "application/json")
	}
	return nil
}

// ResponseChunk implements [filters.ResponseChunkHook].
func (f *Filter) ResponseChunk(_ context.Context, x *filters.Exchange, c *filters.Chunk) error {
	a := x.LastAttempt()
	if a == nil || a.Translator == nil {
		return nil
	}
	if x.Response.Streaming {
		c.Data = a.Translator.StreamChunk(c.Data, c.EOS)
		record(&x.Sent, a.Translator, c.Data, f.now)
		if x.Redaction.Restoring() {
			c.Data = x.Redaction.RestoreStream(c.Data, c.EOS)
		}
	} else {
		if !c.EOS {
			return nil // buffered: the whole body arrives with EOS
		}
		var r translator.Result
		if e, ok := a.Translator.(translator.Embedder); ok && x.Embeddings != nil {
			r = e.EmbeddingsComplete(x.Response.Status, x.Response.Header, c.Data)
		} else {
			r = a.Translator.Complete(x.Response.Status, x.Response.Header, c.Data)
		}
		if x.Redaction.Restoring() && r.Status < http.StatusBadRequest {
			r.Body = x.Redaction.RestoreAnswer(r.Body)
		}
		x.Response.Status, c.Data = r.Status, r.Body
		for _, h := range r.Header {
			x.SetResponseHeader(h.Key, h.Value)
		}
		if x.Chat != nil && r.Status < http.StatusBadRequest {
			x.Sent.FirstToken = f.now()
		}
	}
	if c.EOS {
		// Priced now, not in Done, so the final response message can carry
		// the figures to Envoy's access log.
		x.Sent.Complete = true
		account(x, a)
	}
	return nil
}

// Done implements [filters.DoneHook]: it prices the answer whatever the
// outcome, so a stream the client cut short is still accounted. An answer
// the response cache gave in place of the failed attempts' is the cache's,
// usage and all: estimating it from the last attempt would charge a
// degraded stream to a provider that never answered. A hybrid answer is
// priced where it was picked.
func (f *Filter) Done(_ context.Context, x *filters.Exchange, _ error) {
	if x.Cached.How != "" || x.Hybrid != nil {
		// A hybrid answer was read and priced, every target's, where it
		// was picked (extproc/server).
		return
	}
	if a := x.LastAttempt(); a != nil && a.Translator != nil {
		account(x, a)
	}
}

// account sets x.Usage from what the last attempt's provider reported.
// A stream that did not end normally (the client left, the provider broke
// off) or never carried the provider's count is estimated instead: prompt
// tokens from the request unless the provider counted them, completion
// tokens from the text the client was sent unless the provider counted
// more. Reasoning that a provider keeps out of the stream is not in that
// text, so the estimate errs low for reasoning models.
func account(x *filters.Exchange, a *filters.Attempt) {
	u, ok := a.Translator.Usage()
	usage := filters.Usage{Known: ok, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.Cached(),
		WebSearches: u.ServerToolUse.WebSearchRequests}
	usage.CacheWriteTokens, usage.CacheWrite1hTokens = cacheWrites(u, x.Chat != nil && x.Chat.CachesForAnHour)
	ended := x.Sent.Complete && x.Sent.ErrorType == ""
	if x.Response.Streaming && x.Chat != nil && (!ok || !ended) {
		usage.Known = true
		if usage.PromptTokens == 0 {
			usage.PromptTokens, usage.Estimated = openaiapi.EstimatePromptTokens(x.Chat), true
		}
		if text := openaiapi.TextTokens(string(x.Sent.Text)); text > usage.CompletionTokens {
			usage.CompletionTokens, usage.Estimated = text, true
		}
	}
	if usage.Known {
		usage.CostMicros = Cost(a.Target.Model, usage)
	}
	if lost := LostMicros(x, usage); lost > 0 {
		usage.Known, usage.Estimated = true, true
		usage.HedgedMicros = lost
		usage.CostMicros += lost
	}
	if usage.Known {
		x.Usage = usage
	}
}

// cacheWrites splits the prompt-cache writes a provider reported by
// lifetime: as it broke them down, and those it did not attribute at the
// hour's rate when the request asked for an hour anywhere (hour), else at
// the default lifetime's. A write is never charged below what the
// provider may have billed for it.
func cacheWrites(u openaiapi.Usage, hour bool) (fiveMin, oneHour int) {
	d := u.PromptTokensDetails
	if d == nil {
		return 0, 0
	}
	fiveMin, oneHour = d.CacheWrite5mTokens, d.CacheWrite1hTokens
	rest := max(d.CacheWriteTokens-fiveMin-oneHour, 0)
	if hour {
		return fiveMin, oneHour + rest
	}
	return fiveMin + rest, oneHour
}

// Cost prices usage on model m in micro-USD, rounding half up once per
// request. Cached prompt tokens are billed at the cached-input price,
// cache writes at the price of their lifetime, and each web search the
// provider ran at its price per use.
func Cost(m *policy.Model, u filters.Usage) int64 {
	return m.Price.Micros(u.Tokens()) + int64(u.WebSearches)*m.ToolUseMicros("web_search")
}

var (
	_ filters.RequestBodyHook     = (*Filter)(nil)
	_ filters.AttemptHook         = (*Filter)(nil)
	_ filters.ResponseHeadersHook = (*Filter)(nil)
	_ filters.ResponseChunkHook   = (*Filter)(nil)
	_ filters.DoneHook            = (*Filter)(nil)
)
