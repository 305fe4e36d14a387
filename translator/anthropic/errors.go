package anthropic

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// errorFrom reads an Anthropic error body,
// {"type":"error","error":{"type","message"}}. A body that is not one
// (HTML from a proxy, nothing at all) still gets the status's mapping.
func (tr *Translator) errorFrom(status int, body []byte) *openaiapi.Error {
	var r response
	if json.Unmarshal(body, &r) != nil || r.Error == nil {
		return translator.UpstreamError(tr.t.Provider.Name, status, "", "")
	}
	return tr.apiError(status, r.Error)
}

// apiError maps an Anthropic error with the status it came with (or, in a
// stream or a 200 body, the status its type stands for).
func (tr *Translator) apiError(status int, e *apiError) *openaiapi.Error {
	code := ""
	if status == http.StatusBadRequest && strings.HasPrefix(e.Message, "prompt is too long") {
		// OpenAI clients detect an overlong prompt by this code.
		code = "context_length_exceeded"
	}
	return translator.UpstreamError(tr.t.Provider.Name, status, e.Message, code)
}

// errorResult is the client's result for an error, with the provider's
// retry-after when the client may retry.
func (tr *Translator) errorResult(e *openaiapi.Error, h translator.Headers) translator.Result {
	if ra := h.Get("retry-after"); ra != "" && (e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable) {
		e.WithHeader("retry-after", ra)
	}
	return translator.ErrorResult(e)
}

// statusOf is the HTTP status Anthropic uses for an error type
// (docs.claude.com/en/api/errors).
func statusOf(errType string) int {
	switch errType {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return translator.StatusOverloaded
	default:
		return http.StatusInternalServerError
	}
}
