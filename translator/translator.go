// Package translator is the contract between the translate filter and the
// per-provider translators (translator/openai, anthropic, gemini).
// It is a leaf package so that provider packages need not import the
// filter that registers them.
package translator

import (
	"slices"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
)

// Translator converts one attempt between the OpenAI protocol and one
// provider's protocol. A new Translator is made for every attempt; it is
// not safe for concurrent use.
type Translator interface {
	// Request translates the client's chat request for the provider. raw is
	// the client's body, for translators that patch rather than rebuild it.
	// A request the provider cannot honour is refused with a 400.
	Request(req *openaiapi.ChatRequest, raw []byte) (Upstream, *openaiapi.Error)
	// IsStream reports whether a response with this status and headers is
	// an event stream to be translated chunk by chunk.
	IsStream(status int, h Headers) bool
	// StreamChunk translates provider stream bytes into OpenAI SSE bytes.
	// It keeps carry-over state across calls, may return nothing until an
	// event completes, and on eos closes the stream: with the final events
	// and "data: [DONE]", or with an error event if the provider's stream
	// ended without its final event.
	StreamChunk(b []byte, eos bool) []byte
	// Complete translates a whole (buffered) response: a success into an
	// OpenAI body, anything else into the OpenAI error envelope with the
	// status and headers (retry-after) the client gets.
	Complete(status int, h Headers, body []byte) Result
	// Usage returns the usage seen so far and whether any was reported.
	Usage() (openaiapi.Usage, bool)
}

// Reporter is a Translator that says what the stream events it emitted
// add to the answer, as readback.Chunk would read them back from its
// output, without reading the output again: on a same-protocol stream
// that second reading cost as much as the translation.
type Reporter interface {
	// Sent appends to text the generated text (content, refusals, tool
	// calls' names and arguments) of the events the last StreamChunk call
	// emitted, and returns the type of an error event among them
	// (readback.StreamError when it names none), or "".
	Sent(text []byte) (_ []byte, errorType string)
}

// Target is what a translator needs to know about one attempt.
type Target struct {
	Provider *policy.Provider
	Model    *policy.Model
	// ClientModel is the model name the client sent; responses carry it.
	ClientModel string
	// Key is the provider API key for this attempt; empty means none.
	Key string
	// Header is the client's request headers, for a pass-through
	// translator that keeps the client's protocol version and features.
	Header Headers
	// ID and Created identify the completion in OpenAI form.
	ID      string
	Created int64
	// FitPrompt is the prompt's estimated tokens on a route that fits the
	// output cap to the context window (fit_output_to_context), the
	// estimate the budget reservation was made with; 0 elsewhere.
	FitPrompt int
}

// OutputLimit is the output cap the attempt's provider gets for a request
// that asked for at most requested tokens (0: no cap): the model's
// [policy.Model.OutputLimit], or on a route that fits output to the
// context window its [policy.Model.FitOutput]. It is what the budget
// reservation covered, so every translator sends it.
func (t Target) OutputLimit(requested int) int {
	if t.FitPrompt > 0 {
		return t.Model.FitOutput(requested, t.FitPrompt)
	}
	return t.Model.OutputLimit(requested)
}

// forwardedHeaders are the only client request headers a provider gets, of
// every kind: the translator sets what each kind needs (its key, version
// and content type), and nothing else a client sends is the provider's
// business. Cookies, X-Forwarded-For (the end user's address),
// OpenAI-Organization and OpenAI-Project (a bogus one makes the provider
// answer 401, which rests the shared key), anthropic-beta (priced
// features), X-User-Id and SDK telemetry stay at the gateway.
var forwardedHeaders = map[string]bool{"content-type": true, "accept": true, "x-request-id": true}

// Forwarded reports whether a client request header (lower case) may reach
// a provider. Pseudo-headers and Envoy's own x-envoy-* are Envoy's.
func Forwarded(name string) bool {
	return forwardedHeaders[name] || strings.HasPrefix(name, ":") || strings.HasPrefix(name, "x-envoy-")
}

// Upstream is a translated request.
type Upstream struct {
	// Path is the request path with its query string.
	Path string
	// Header lists headers to set (auth, content type, versions).
	Header Headers
	Body   []byte
}

// Result is a translated whole response.
type Result struct {
	Status int
	// Header lists headers to set on the client's response, such as
	// retry-after.
	Header Headers
	Body   []byte
}

// ErrorResult is the Result of an error envelope, with its headers.
func ErrorResult(e *openaiapi.Error) Result {
	r := Result{Status: e.Status, Body: e.Body()}
	for k, v := range e.Headers {
		r.Header = append(r.Header, Header{Key: k, Value: v})
	}
	return r
}

// Header is one HTTP header with a lower-case key.
type Header struct{ Key, Value string }

// Headers is a list of headers with lower-case keys.
type Headers []Header

// Has reports whether key is among the headers, with any value.
func (h Headers) Has(key string) bool {
	return slices.ContainsFunc(h, func(kv Header) bool { return kv.Key == key })
}

// Get returns the first value of key, or "".
func (h Headers) Get(key string) string {
	for _, kv := range h {
		if kv.Key == key {
			return kv.Value
		}
	}
	return ""
}

// ChatEvent is what a translator for another client API reads of an
// event a chat translator wrote: a chunk's deltas and finish reasons, or
// the error event that ended the stream.
type ChatEvent struct {
	Choices []struct {
		Delta struct {
			Content   *string              `json:"content"`
			Refusal   *string              `json:"refusal"`
			ToolCalls []openaiapi.ToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// Err is the refusal an error event stands for, with the status its type
// stands for; nil for a chunk.
func (ev *ChatEvent) Err() *openaiapi.Error {
	if ev.Error == nil {
		return nil
	}
	e := &openaiapi.Error{Status: StatusOf(ev.Error.Type), Type: ev.Error.Type, Message: ev.Error.Message}
	if ev.Error.Code != nil {
		e.Code = *ev.Error.Code
	}
	return e
}

// ErrorEventer is the optional power of a translator whose client events
// are numbered (the Responses API's sequence_number): it renders the error
// event that ends a stream the gateway breaks off, numbered next.
type ErrorEventer interface {
	ErrorEvent(e *openaiapi.Error) []byte
}

// Embedder is the optional power of a translator to translate embeddings.
type Embedder interface {
	// EmbeddingsRequest translates the client's embeddings request.
	EmbeddingsRequest(req *openaiapi.EmbeddingsRequest, raw []byte) (Upstream, *openaiapi.Error)
	// EmbeddingsComplete translates the provider's whole response into an
	// OpenAI embeddings list (floats, or base64 when the client asked for
	// it) or an error envelope.
	EmbeddingsComplete(status int, h Headers, body []byte) Result
}
