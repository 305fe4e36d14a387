package anthropic

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// Passthrough serves a Messages client (/v1/messages) from an Anthropic
// provider: the (Messages, Anthropic) schema pair. The client's body goes
// out as it came, but for the model name, with the gateway's key in place
// of the client's; the answer comes back byte for byte, read on the way
// for its usage and its end. Errors are the provider's, mapped as for
// chat (a refused gateway key is the gateway's fault, not the client's)
// and rendered in Anthropic's envelope.
//
// The same pass-through serves /v1/messages/count_tokens, whose answer
// ({"input_tokens": N}) costs nothing and reports no usage.
type Passthrough struct {
	chat  Translator // reads usage and errors as the chat translator does
	count bool       // a token count, not a message
	done  bool       // message_stop or an error event was seen
	cut   bool       // the stream ended early and was told so
}

// NewPassthrough returns a pass-through translator for one attempt of a
// Messages request.
func NewPassthrough(t translator.Target) *Passthrough { return &Passthrough{chat: Translator{t: t}} }

// NewCounter returns a pass-through translator for one attempt of a token
// count.
func NewCounter(t translator.Target) *Passthrough {
	return &Passthrough{chat: Translator{t: t}, count: true}
}

// Request implements [translator.Translator.Request]: raw with its model
// replaced by the provider's and its max_tokens held to the model's
// output cap, and the anthropic-version and beta flags the client sent
// (the gateway's version when it sent none), but those that change the
// price. Everything else goes as the client wrote it, the members and
// blocks the gateway does not know included.
func (p *Passthrough) Request(req *openaiapi.ChatRequest, raw []byte) (translator.Upstream, *openaiapi.Error) {
	t := p.chat.t
	body, err := jsonform.ReplaceMember(raw, "model", strconv.Quote(t.Model.Upstream))
	if err == nil && req != nil && !p.count {
		// The budget reservation covers the model's cap; an answer longer
		// than it (max_tokens 100000 with an output-128k beta) would cost
		// what no reservation held.
		if asked, most := req.OutputCap(), t.OutputLimit(req.OutputCap()); asked > most {
			body, err = jsonform.ReplaceMember(body, "max_tokens", strconv.Itoa(most))
		}
	}
	if err != nil {
		return translator.Upstream{}, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_body", "the request body is not a JSON object")
	}
	version := t.Header.Get("anthropic-version")
	if version == "" {
		version = anthropicapi.Version
	}
	path := "/v1/messages"
	if p.count {
		path += "/count_tokens"
	}
	if _, query, ok := strings.Cut(t.Header.Get(":path"), "?"); ok && query != "" {
		// The SDKs' beta client marks its calls ?beta=true; the query is
		// the client's, on the provider's own protocol.
		path += "?" + query
	}
	up := translator.Upstream{
		Path: t.Provider.BasePath + path,
		Header: translator.Headers{
			{Key: "content-type", Value: "application/json"},
			{Key: "anthropic-version", Value: version},
		},
		Body: body,
	}
	if beta := unpricedBetas(t.Header.Get("anthropic-beta")); beta != "" {
		// The features the client opted into are Anthropic's to serve;
		// every other provider is spared the header.
		up.Header = append(up.Header, translator.Header{Key: "anthropic-beta", Value: beta})
	}
	if t.Key != "" {
		up.Header = append(up.Header, translator.Header{Key: "x-api-key", Value: t.Key})
	}
	return up, nil
}

// IsStream implements [translator.Translator.IsStream].
func (p *Passthrough) IsStream(status int, h translator.Headers) bool {
	return p.chat.IsStream(status, h)
}

// Usage implements [translator.Translator.Usage].
func (p *Passthrough) Usage() (openaiapi.Usage, bool) { return p.chat.Usage() }

// StreamChunk implements [translator.Translator.StreamChunk]: b goes to
// the client unchanged. A stream that ends without message_stop gets an
// error event, so the client cannot take a cut answer for a whole one.
func (p *Passthrough) StreamChunk(b []byte, eos bool) []byte {
	p.chat.r.Feed(b)
	for {
		ev, ok := p.chat.r.Next()
		if !ok {
			break
		}
		p.observe(ev.Data)
	}
	if eos {
		if ev, ok := p.chat.r.Flush(); ok {
			p.observe(ev.Data)
		}
		if !p.done && !p.cut {
			p.cut = true
			e := translator.GarbageError(p.chat.t.Provider.Name, "the stream ended before it was complete")
			return append(b, anthropicapi.ErrorEvent(e)...)
		}
	}
	return b
}

// observe reads one event for the usage it reports and whether it ends
// the stream.
func (p *Passthrough) observe(data []byte) {
	var e event
	if json.Unmarshal(data, &e) != nil {
		return
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			p.chat.usage.set(e.Message.Usage)
		}
	case "message_delta":
		p.chat.usage.set(e.Usage)
	case "message_stop", "error":
		p.done = true
	}
}

// Complete implements [translator.Translator.Complete].
func (p *Passthrough) Complete(status int, h translator.Headers, body []byte) translator.Result {
	if p.count && status >= 200 && status <= 299 {
		return translator.Result{Status: status, Body: body}
	}
	r := p.chat.Complete(status, h, body)
	if r.Status >= http.StatusBadRequest {
		r.Body = anthropicapi.ErrorBody(translator.ReadError(r.Status, r.Body), "")
		return r
	}
	return translator.Result{Status: status, Body: body}
}

// pricedBetas are the beta flags, by prefix, that would make Anthropic
// bill at other rates than the policy's prices for the model: a long
// context (past 200,000 input tokens) is billed at a premium. Without the
// flag Anthropic refuses such a prompt rather than bill it. A flag that
// only lengthens the answer (output-128k) is kept: the gateway holds
// max_tokens to the model's cap.
var pricedBetas = []string{"context-1m-"}

// unpricedBetas is an anthropic-beta value without the priced flags.
func unpricedBetas(v string) string {
	if v == "" {
		return ""
	}
	flags := strings.Split(v, ",")
	kept := flags[:0]
	for _, f := range flags {
		f = strings.TrimSpace(f)
		if f != "" && !slices.ContainsFunc(pricedBetas, func(p string) bool { return strings.HasPrefix(f, p) }) {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, ",")
}

var _ translator.Translator = (*Passthrough)(nil)
