package gemini

import (
	"encoding/json"
	"net/http"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// Counter serves /v1/messages/count_tokens from a Gemini provider: the
// (Messages token count, Gemini) schema pair. The request is the one
// generateContent would get, sent whole to models.countTokens as its
// generateContentRequest, so the system instruction and the function
// declarations are counted too; the answer's totalTokens comes back as
// Anthropic's {"input_tokens": N}, errors in Anthropic's envelope. A count
// costs nothing and reports no usage.
type Counter struct {
	tr Translator
}

// NewCounter returns a translator for one attempt of a token count.
func NewCounter(t translator.Target) *Counter { return &Counter{tr: Translator{t: t}} }

// countRequest is a models.countTokens body: generateContentRequest names
// its model, unlike a generateContent body.
type countRequest struct {
	GenerateContentRequest json.RawMessage `json:"generateContentRequest"`
}

// Request implements [translator.Translator.Request]: req is the count's
// canonical chat request.
func (c *Counter) Request(req *openaiapi.ChatRequest, _ []byte) (translator.Upstream, *openaiapi.Error) {
	g, e := c.tr.generateRequest(req)
	if e != nil {
		return translator.Upstream{}, e
	}
	var fields map[string]json.RawMessage
	if b, err := json.Marshal(g); err == nil && json.Unmarshal(b, &fields) == nil {
		fields["model"], _ = json.Marshal(c.tr.modelName())
		inner, _ := json.Marshal(fields)
		if body, err := json.Marshal(countRequest{GenerateContentRequest: inner}); err == nil {
			return c.tr.upstream(":countTokens", body), nil
		}
	}
	return translator.Upstream{}, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_value", "the request cannot be encoded for the provider")
}

// IsStream implements [translator.Translator.IsStream]: a count is never
// streamed.
func (*Counter) IsStream(int, translator.Headers) bool { return false }

// StreamChunk implements [translator.Translator.StreamChunk]; a count has
// no stream.
func (*Counter) StreamChunk([]byte, bool) []byte { return nil }

// Usage implements [translator.Translator.Usage]: counting costs nothing.
func (*Counter) Usage() (openaiapi.Usage, bool) { return openaiapi.Usage{}, false }

// Complete implements [translator.Translator.Complete].
func (c *Counter) Complete(status int, h translator.Headers, body []byte) translator.Result {
	if status < 200 || status > 299 {
		return countError(c.tr.errorFor(status, h, body))
	}
	var resp struct {
		TotalTokens *int `json:"totalTokens"`
	}
	if !isObject(body) || json.Unmarshal(body, &resp) != nil || resp.TotalTokens == nil {
		return countError(translator.GarbageError(c.tr.providerName(), "the body is not a countTokens response"))
	}
	out, _ := json.Marshal(anthropicapi.TokenCount{InputTokens: *resp.TotalTokens})
	return translator.Result{Status: http.StatusOK, Body: out}
}

func countError(e *openaiapi.Error) translator.Result {
	r := translator.ErrorResult(e)
	r.Body = anthropicapi.ErrorBody(e, "")
	return r
}

var _ translator.Translator = (*Counter)(nil)
