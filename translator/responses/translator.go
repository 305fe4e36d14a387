package responses

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/apischema/responsesapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
)

// Translator serves a Responses client through a chat translator: the
// request goes out as chat does, and what the chat translator writes back
// is rewritten as a response object or the Responses events. Not safe for
// concurrent use.
type Translator struct {
	chat translator.Translator
	t    translator.Target
	// req is the client's request without its input: the response
	// repeats its settings, and the input, most of a request, is in the
	// canonical chat request already.
	req *responsesapi.Request
	// names maps the chat function names of calls back to the functions
	// of the client's namespace tools.
	names toolNames
	// suffix makes the ids: resp_, msg_ and fc_ followed by it.
	suffix string

	// Stream state.
	r       sse.Reader
	seq     int // the next event's sequence number
	started bool
	items   []*item
	text    *item         // the message item text goes to, nil before any
	tools   map[int]*item // by the chat tool call's index
	reason  string
	done    bool // response.completed (or incomplete) went out
	failed  bool // an error event went out
}

// New returns a translator for one attempt whose provider the chat
// translator serves.
func New(chat translator.Translator, t translator.Target) *Translator {
	return &Translator{chat: chat, t: t, suffix: strings.TrimPrefix(t.ID, "chatcmpl-")}
}

// Request implements [translator.Translator.Request]: raw is the client's
// Responses body, req its canonical chat request, which the chat
// translator gets with a body of its own. What a chat request cannot
// carry is refused ([checkItems]).
func (tr *Translator) Request(req *openaiapi.ChatRequest, raw []byte) (translator.Upstream, *openaiapi.Error) {
	r, e := responsesapi.ParseRequest(raw)
	if e != nil {
		return translator.Upstream{}, e
	}
	if e := checkItems(r, tr.t.Provider.Name); e != nil {
		return translator.Upstream{}, e
	}
	r.Input = responsesapi.Input{}
	tr.req, tr.names = r, namesOf(r.Tools)
	body, err := json.Marshal(req)
	if err != nil {
		return translator.Upstream{}, openaiapi.Errorf(http.StatusInternalServerError, openaiapi.TypeServer, "internal_error", "the request could not be encoded: %v", err)
	}
	return tr.chat.Request(req, body)
}

// IsStream implements [translator.Translator.IsStream].
func (tr *Translator) IsStream(status int, h translator.Headers) bool {
	return tr.chat.IsStream(status, h)
}

// Usage implements [translator.Translator.Usage].
func (tr *Translator) Usage() (openaiapi.Usage, bool) { return tr.chat.Usage() }

// response is the response object as it stands: its id, the request's
// settings, the given status and output.
func (tr *Translator) response(status string, output []any) responsesapi.Response {
	r := tr.req
	resp := responsesapi.Response{
		ID: "resp_" + tr.suffix, Object: "response", CreatedAt: tr.t.Created, Status: status,
		Model: tr.t.ClientModel, Output: output, ParallelToolCalls: true,
		Text: responsesapi.TextConfig{Format: &responsesapi.Format{Type: "text"}}, ToolChoice: responsesapi.ToolChoice{Mode: "auto"},
		Tools: []responsesapi.Tool{}, Truncation: "disabled", Metadata: map[string]string{},
	}
	if output == nil {
		resp.Output = []any{}
	}
	if r == nil {
		return resp
	}
	resp.Instructions, resp.MaxOutputTokens, resp.Temperature, resp.TopP = r.Instructions, r.MaxOutputTokens, r.Temperature, r.TopP
	if r.ParallelToolCalls != nil {
		resp.ParallelToolCalls = *r.ParallelToolCalls
	}
	if r.Text != nil && r.Text.Format != nil {
		resp.Text = *r.Text
	}
	if r.ToolChoice != nil {
		resp.ToolChoice = *r.ToolChoice
	}
	if r.Tools != nil {
		resp.Tools = r.Tools
	}
	if r.Truncation != "" {
		resp.Truncation = r.Truncation
	}
	if r.User != "" {
		resp.User = &r.User
	}
	if r.Metadata != nil {
		resp.Metadata = r.Metadata
	}
	return resp
}

// finished sets what ends a response: its status (incomplete when the
// model was cut off or filtered), why, and the usage.
func finished(resp *responsesapi.Response, finish string, u *openaiapi.Usage) {
	resp.Status = responsesapi.StatusCompleted
	switch finish {
	case openaiapi.FinishLength:
		resp.Status, resp.IncompleteDetails = responsesapi.StatusIncomplete, &responsesapi.IncompleteDetails{Reason: "max_output_tokens"}
	case openaiapi.FinishContentFilter:
		resp.Status, resp.IncompleteDetails = responsesapi.StatusIncomplete, &responsesapi.IncompleteDetails{Reason: "content_filter"}
	}
	if u != nil {
		resp.Usage = usage(*u)
	}
}

// usage is a chat usage in Responses terms: the same counts, renamed.
func usage(u openaiapi.Usage) *responsesapi.Usage {
	r := &responsesapi.Usage{
		InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens,
		InputTokensDetails: responsesapi.InputTokensDetails{CachedTokens: u.Cached()},
	}
	if d := u.PromptTokensDetails; d != nil {
		r.InputTokensDetails.CacheWriteTokens = d.CacheWriteTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		r.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	if r.TotalTokens == 0 {
		r.TotalTokens = r.InputTokens + r.OutputTokens
	}
	return r
}

var _ translator.Translator = (*Translator)(nil)

var _ translator.ErrorEventer = (*Translator)(nil)
