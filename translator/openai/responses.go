package openai

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/apischema/responsesapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
)

// ResponsesPassthrough serves a Responses client (/v1/responses) from an
// OpenAI provider: the (Responses, Responses) schema pair. The client's
// body goes out as it came, with the provider's model name, the output cap
// the gateway reserved for (when the client asked for more, or named
// none) and the gateway's key; fields, items and tools the gateway does
// not know reach OpenAI untouched. The answer comes back byte for byte,
// read on the way for its usage, the web searches it ran and its end.
// Errors are the provider's, mapped as for chat. Not safe for concurrent
// use.
type ResponsesPassthrough struct {
	chat Translator // maps errors as the chat translator does

	r        sse.Reader
	usage    openaiapi.Usage
	hasUsage bool
	// next is the sequence number the stream's next event would carry,
	// which an error event of the gateway's takes.
	next  int
	done  bool // the provider's last event (completed, incomplete, failed, error) was seen
	ended bool // the gateway ended the stream with an error event
}

// NewResponsesPassthrough returns a pass-through translator for one
// attempt of a Responses request.
func NewResponsesPassthrough(t translator.Target) *ResponsesPassthrough {
	return &ResponsesPassthrough{chat: *New(t)}
}

// unaccounted are OpenAI's hosted tools billed by a measure their answer
// does not report, so that no budget could account them, with why. A
// hosted tool the answer counts (web search: one web_search_call item per
// billed call) is served; a tool type not listed passes, as every field
// the gateway does not know does.
var unaccounted = map[string]string{
	"file_search":          "file search is billed per call and for its vector stores, which the answer does not count",
	"code_interpreter":     "code interpreter is billed per container session, which the answer does not count",
	"image_generation":     "image generation is billed per image by size and quality, which the answer does not count",
	"computer_use_preview": "computer use runs on a model of its own, priced apart from the one this route serves",
	"computer_use":         "computer use runs on a model of its own, priced apart from the one this route serves",
	"mcp":                  "remote MCP tools are called from OpenAI, by servers this gateway neither vets nor accounts",
}

// Request implements [translator.Translator.Request]: raw with the
// provider's model name and the reserved output cap. A hosted tool whose
// cost the answer does not report is refused.
func (p *ResponsesPassthrough) Request(req *openaiapi.ChatRequest, raw []byte) (translator.Upstream, *openaiapi.Error) {
	var tools struct {
		Tools []struct {
			Type string `json:"type"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(raw, &tools) // the route's parser read the body already
	for i, t := range tools.Tools {
		if why, ok := unaccounted[t.Type]; ok {
			param := "tools[" + strconv.Itoa(i) + "]"
			return translator.Upstream{}, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_parameter",
				"%s: tools of type %q are not served through this gateway: %s", param, t.Type, why).WithParam(param)
		}
	}
	t := p.chat.t
	model, _ := json.Marshal(t.Model.Upstream)
	body, err := jsonform.ReplaceMember(raw, "model", string(model))
	if err == nil {
		body, err = outputCap(body, req, t.OutputLimit)
	}
	if err == nil && req != nil && req.PricedToolUses > 0 {
		// The searches the reservation covers are the most OpenAI may run.
		body, err = jsonform.SetMember(body, "max_tool_calls", strconv.Itoa(req.PricedToolUses))
	}
	if err != nil {
		return translator.Upstream{}, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_body", "the request body is not a JSON object")
	}
	path, h := p.chat.endpoint("responses")
	return translator.Upstream{Path: path, Header: h, Body: body}, nil
}

// outputCap writes the output cap the gateway reserved for, limit of the
// client's: the client's own max_output_tokens is left as it is when it
// is that cap.
func outputCap(body []byte, req *openaiapi.ChatRequest, limit func(int) int) ([]byte, error) {
	asked := 0
	if req != nil {
		asked = req.OutputCap()
	}
	capped := limit(asked)
	if capped <= 0 || capped == asked {
		return body, nil
	}
	return jsonform.SetMember(body, "max_output_tokens", strconv.Itoa(capped))
}

// IsStream implements [translator.Translator.IsStream].
func (p *ResponsesPassthrough) IsStream(status int, h translator.Headers) bool {
	return p.chat.IsStream(status, h)
}

// Usage implements [translator.Translator.Usage]: the tokens the answer
// reports, and the web searches it ran.
func (p *ResponsesPassthrough) Usage() (openaiapi.Usage, bool) { return p.usage, p.hasUsage }

// passEvent is what the pass-through reads of a stream event.
type passEvent struct {
	Type           string    `json:"type"`
	SequenceNumber *int      `json:"sequence_number"`
	Response       *answer   `json:"response"`
	Item           *itemType `json:"item"`
}

// answer is what the pass-through reads of a response object.
type answer struct {
	Usage  *responsesapi.Usage `json:"usage"`
	Output []itemType          `json:"output"`
}

type itemType struct {
	Type string `json:"type"`
}

// StreamChunk implements [translator.Translator.StreamChunk]: b goes to
// the client unchanged. A stream that ends before its last event gets an
// error event, numbered next, so the client cannot take a cut answer for
// a whole one.
func (p *ResponsesPassthrough) StreamChunk(b []byte, eos bool) []byte {
	p.r.Feed(b)
	for {
		ev, ok := p.r.Next()
		if !ok {
			break
		}
		p.observe(ev.Data)
	}
	if !eos {
		return b
	}
	if ev, ok := p.r.Flush(); ok {
		p.observe(ev.Data)
	}
	if p.done {
		return b
	}
	// b[:len(b):len(b)]: the event must not land in the caller's array
	// past b.
	return append(b[:len(b):len(b)], p.ErrorEvent(translator.GarbageError(p.chat.t.Provider.Name, "the stream ended before it was complete"))...)
}

// observe reads one event for the usage it reports, the web search it
// ran and whether it ends the stream.
func (p *ResponsesPassthrough) observe(data []byte) {
	var ev passEvent
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	if ev.SequenceNumber != nil {
		p.next = max(p.next, *ev.SequenceNumber+1)
	}
	switch ev.Type {
	case responsesapi.EventOutputItemDone:
		if ev.Item != nil && isWebSearch(ev.Item.Type) {
			p.usage.ServerToolUse.WebSearchRequests++
		}
	case responsesapi.EventCompleted, responsesapi.EventIncomplete, "response.failed":
		p.done = true
		if ev.Response != nil {
			p.read(ev.Response.Usage)
		}
	case responsesapi.EventError:
		p.done = true
	}
}

// ErrorEvent implements [translator.ErrorEventer]: the error event that
// ends a stream the gateway breaks off, numbered next. Nothing follows it.
func (p *ResponsesPassthrough) ErrorEvent(e *openaiapi.Error) []byte {
	if p.done || p.ended {
		return nil
	}
	p.ended = true
	p.next++
	return responsesapi.ErrorEvent(e, p.next-1)
}

// Complete implements [translator.Translator.Complete]: a response object
// as it came, read for its usage and web searches; an error in OpenAI's
// envelope, as the chat translator maps it.
func (p *ResponsesPassthrough) Complete(status int, h translator.Headers, body []byte) translator.Result {
	if status < 200 || status > 299 {
		return p.chat.Complete(status, h, body)
	}
	var a answer
	if json.Unmarshal(body, &a) != nil {
		return translator.ErrorResult(translator.GarbageError(p.chat.t.Provider.Name, "the body is not a JSON object"))
	}
	p.read(a.Usage)
	for _, it := range a.Output {
		if isWebSearch(it.Type) {
			p.usage.ServerToolUse.WebSearchRequests++
		}
	}
	return translator.Result{Status: status, Body: body}
}

// read takes the usage a response reports, in chat terms: input tokens
// (the cached and the cache-written ones among them) are prompt tokens,
// output tokens (the reasoning ones among them) completion tokens.
func (p *ResponsesPassthrough) read(u *responsesapi.Usage) {
	if u == nil {
		return
	}
	p.hasUsage = true
	p.usage.PromptTokens, p.usage.CompletionTokens, p.usage.TotalTokens = u.InputTokens, u.OutputTokens, u.TotalTokens
	if p.usage.TotalTokens == 0 {
		p.usage.TotalTokens = u.InputTokens + u.OutputTokens
	}
	p.usage.PromptTokensDetails = &openaiapi.PromptTokensDetails{CachedTokens: u.InputTokensDetails.CachedTokens, CacheWriteTokens: u.InputTokensDetails.CacheWriteTokens}
	p.usage.CompletionTokensDetails = &openaiapi.CompletionTokensDetails{ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
}

// isWebSearch reports whether an output item is a web search call, which
// OpenAI bills per call.
func isWebSearch(typ string) bool { return typ == responsesapi.ItemWebSearchCall }

var (
	_ translator.Translator   = (*ResponsesPassthrough)(nil)
	_ translator.ErrorEventer = (*ResponsesPassthrough)(nil)
)
