package openai

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/configs/policy"
	wire "github.com/switchyard/switchyard/filters/openai"
	"github.com/switchyard/switchyard/filters/translate/sse"
	"github.com/switchyard/switchyard/filters/translate/translator"
)

// Translator converts one attempt to an OpenAI-protocol provider.
type Translator struct {
	t            translator.Target
	includeUsage bool

	r        sse.Reader
	usage    wire.Usage
	hasUsage bool
	done     bool
	failed   bool
}

// New returns a translator for one attempt.
func New(t translator.Target) *Translator { return &Translator{t: t} }

// Request implements [translator.Translator.Request].
func (tr *Translator) Request(req *wire.ChatRequest, raw []byte) (translator.Upstream, *wire.Error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return translator.Upstream{}, wire.Errorf(http.StatusBadRequest, wire.TypeInvalidRequest, "invalid_json", "the request body is not a JSON object")
	}
	tr.includeUsage = req.IncludeUsage()
	obj["model"], _ = json.Marshal(tr.t.Model.Upstream)
	if req.Stream {
		opts := map[string]json.RawMessage{}
		if so, ok := obj["stream_options"]; ok {
			_ = json.Unmarshal(so, &opts)
		}
		opts["include_usage"] = json.RawMessage("true")
		obj["stream_options"], _ = json.Marshal(opts)
	} else {
		delete(obj, "stream_options")
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return translator.Upstream{}, wire.Errorf(http.StatusBadRequest, wire.TypeInvalidRequest, "invalid_json", "the request body cannot be re-encoded")
	}
	up := translator.Upstream{Body: body, Header: translator.Headers{{Key: "content-type", Value: "application/json"}}}
	p := tr.t.Provider
	if p.Kind == policy.KindAzureOpenAI {
		up.Path = p.BasePath + "/openai/deployments/" + tr.t.Model.Upstream + "/chat/completions?api-version=" + p.APIVersion
		if tr.t.Key != "" {
			up.Header = append(up.Header, translator.Header{Key: "api-key", Value: tr.t.Key})
		}
	} else {
		up.Path = p.BasePath + "/v1/chat/completions"
		if tr.t.Key != "" {
			up.Header = append(up.Header, translator.Header{Key: "authorization", Value: "Bearer " + tr.t.Key})
		}
	}
	return up, nil
}

// IsStream implements [translator.Translator.IsStream].
func (tr *Translator) IsStream(status int, h translator.Headers) bool {
	return status == http.StatusOK && strings.HasPrefix(h.Get("content-type"), "text/event-stream")
}

// chunkHead is the part of a stream chunk the gateway reads.
type chunkHead struct {
	Choices []json.RawMessage `json:"choices"`
	Usage   *wire.Usage       `json:"usage"`
	Error   *json.RawMessage  `json:"error"`
}

// StreamChunk implements [translator.Translator.StreamChunk].
func (tr *Translator) StreamChunk(b []byte, eos bool) []byte {
	tr.r.Feed(b)
	var out []byte
	for {
		ev, ok := tr.r.Next()
		if !ok {
			break
		}
		out = tr.event(out, ev.Data)
	}
	if !eos {
		return out
	}
	if ev, ok := tr.r.Flush(); ok {
		out = tr.event(out, ev.Data)
	}
	if !tr.done && !tr.failed {
		tr.failed = true
		out = append(out, translator.GarbageError(tr.t.Provider.Name, "the stream ended before it was complete").StreamEvent()...)
	}
	return out
}

func (tr *Translator) event(out, data []byte) []byte {
	if tr.done || tr.failed {
		return out
	}
	if string(data) == "[DONE]" {
		tr.done = true
		return append(out, sse.Done...)
	}
	var head chunkHead
	if err := json.Unmarshal(data, &head); err != nil {
		tr.failed = true
		return append(out, translator.GarbageError(tr.t.Provider.Name, "a stream event is not JSON").StreamEvent()...)
	}
	if head.Error != nil {
		tr.failed = true
		return append(out, tr.streamError(data).StreamEvent()...)
	}
	if head.Usage != nil {
		tr.usage, tr.hasUsage = *head.Usage, true
	}
	if len(head.Choices) == 0 && (head.Usage == nil || !tr.includeUsage) {
		// Azure's prompt-filter chunk, or the usage chunk the client did not
		// ask for: neither may reach a client expecting choices[0].
		return out
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return out
	}
	obj["model"], _ = json.Marshal(tr.t.ClientModel)
	delete(obj, "prompt_filter_results")
	if !tr.includeUsage {
		delete(obj, "usage")
	}
	enc, err := json.Marshal(obj)
	if err != nil {
		return out
	}
	return sse.AppendData(out, enc)
}

func (tr *Translator) streamError(data []byte) *wire.Error {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	return translator.UpstreamError(tr.t.Provider.Name, http.StatusBadGateway, e.Error.Message, "")
}

// Complete implements [translator.Translator.Complete].
func (tr *Translator) Complete(status int, h translator.Headers, body []byte) translator.Result {
	if status < 200 || status > 299 {
		e := tr.errorFrom(status, body)
		if ra := h.Get("retry-after"); ra != "" && (e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable) {
			e.WithHeader("retry-after", ra)
		}
		return translator.ErrorResult(e)
	}
	var obj map[string]json.RawMessage
	var head struct {
		Choices []json.RawMessage `json:"choices"`
		Usage   *wire.Usage       `json:"usage"`
	}
	if json.Unmarshal(body, &obj) != nil || json.Unmarshal(body, &head) != nil || head.Choices == nil {
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, "the body is not a chat completion"))
	}
	if head.Usage != nil {
		tr.usage, tr.hasUsage = *head.Usage, true
	}
	obj["model"], _ = json.Marshal(tr.t.ClientModel)
	delete(obj, "prompt_filter_results")
	out, err := json.Marshal(obj)
	if err != nil {
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, "the body cannot be re-encoded"))
	}
	return translator.Result{Status: http.StatusOK, Body: out}
}

// errorFrom reads an OpenAI-style error body, current ({"error":{...}}) or
// the older top-level form some compatible servers use.
func (tr *Translator) errorFrom(status int, body []byte) *wire.Error {
	var e struct {
		Error *struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
		Message string `json:"message"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil {
		if e.Error != nil {
			msg = e.Error.Message
		} else {
			msg = e.Message
		}
	}
	code := ""
	if e.Error != nil {
		if s, ok := e.Error.Code.(string); ok && status == http.StatusBadRequest {
			code = s
		}
	}
	return translator.UpstreamError(tr.t.Provider.Name, status, msg, code)
}

// Usage implements [translator.Translator.Usage].
func (tr *Translator) Usage() (wire.Usage, bool) { return tr.usage, tr.hasUsage }

var _ translator.Translator = (*Translator)(nil)
