package anthropic

import (
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
)

// Translator converts one attempt to an Anthropic Messages API provider.
// It is not safe for concurrent use.
type Translator struct {
	t translator.Target
	// includeUsage is the client's stream_options.include_usage.
	includeUsage bool
	// jsonTool is set when the request emulates JSON mode with the forced
	// json_tool_call tool, whose input the answer turns into content.
	jsonTool bool

	// Stream state.
	r          sse.Reader
	started    bool // the role chunk went out
	done       bool // message_stop arrived
	failed     bool // an error event went out
	blocks     map[int]*blockState
	nextTool   int // OpenAI index of the next tool call
	stopReason string

	usage counts
}

// New returns a translator for one attempt.
func New(t translator.Target) *Translator { return &Translator{t: t} }

// IsStream implements [translator.Translator.IsStream].
func (tr *Translator) IsStream(status int, h translator.Headers) bool {
	return status == http.StatusOK && strings.HasPrefix(strings.ToLower(h.Get("content-type")), "text/event-stream")
}

// Usage implements [translator.Translator.Usage].
func (tr *Translator) Usage() (openaiapi.Usage, bool) { return tr.usage.openai(), tr.usage.seen }

// counts accumulates Anthropic's usage. Anthropic reports cumulative
// values (message_start, then message_delta), so each report sets the
// counts it carries and leaves the others alone.
type counts struct {
	input, output, cacheRead, cacheWrite int
	// write5m and write1h are cacheWrite by lifetime, as far as Anthropic
	// broke it down.
	write5m, write1h int
	webSearches      int
	seen             bool
}

func (c *counts) set(u *usage) {
	if u == nil {
		return
	}
	for _, f := range []struct {
		from *int
		to   *int
	}{
		{u.InputTokens, &c.input},
		{u.OutputTokens, &c.output},
		{u.CacheReadInputTokens, &c.cacheRead},
		{u.CacheCreationInputTokens, &c.cacheWrite},
	} {
		if f.from != nil {
			*f.to, c.seen = *f.from, true
		}
	}
	if cc := u.CacheCreation; cc != nil {
		if cc.Ephemeral5m != nil {
			c.write5m = *cc.Ephemeral5m
		}
		if cc.Ephemeral1h != nil {
			c.write1h = *cc.Ephemeral1h
		}
	}
	if st := u.ServerToolUse; st != nil && st.WebSearchRequests != nil {
		// Cumulative, as the token counts are.
		c.webSearches = *st.WebSearchRequests
	}
}

// openai returns the counts in OpenAI form. Anthropic's input_tokens
// excludes cache reads and writes, whereas OpenAI's prompt_tokens includes
// cached tokens, so the prompt is the sum of the three. The writes are at
// least their breakdown's sum: a total short of it would leave some
// unbilled.
func (c *counts) openai() openaiapi.Usage {
	write := max(c.cacheWrite, c.write5m+c.write1h)
	prompt := c.input + c.cacheRead + write
	return openaiapi.Usage{
		PromptTokens:     prompt,
		CompletionTokens: c.output,
		TotalTokens:      prompt + c.output,
		PromptTokensDetails: &openaiapi.PromptTokensDetails{CachedTokens: c.cacheRead, CacheWriteTokens: write,
			CacheWrite5mTokens: c.write5m, CacheWrite1hTokens: c.write1h},
		ServerToolUse: openaiapi.ServerToolUse{WebSearchRequests: c.webSearches},
	}
}

var _ translator.Translator = (*Translator)(nil)

// CheckRequest is the health check of an Anthropic provider: one page of
// one model from the Models API costs no tokens.
func CheckRequest(p *policy.Provider, key string) translator.Upstream {
	up := translator.Upstream{
		Path:   p.BasePath + "/v1/models?limit=1",
		Header: translator.Headers{{Key: "anthropic-version", Value: apiVersion}},
	}
	if key != "" {
		up.Header = append(up.Header, translator.Header{Key: "x-api-key", Value: key})
	}
	return up
}
