package anthropicapi

import (
	"encoding/json"
	"net/http"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// ErrorType is Anthropic's error type for an HTTP status
// (docs.claude.com/en/api/errors); clients switch on it.
func ErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

type envelope struct {
	Type      string    `json:"type"`
	Error     errorBody `json:"error"`
	RequestID string    `json:"request_id,omitempty"`
}

type errorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ErrorBody renders a refusal in Anthropic's envelope,
// {"type":"error","error":{"type","message"},"request_id"}.
func ErrorBody(e *openaiapi.Error, requestID string) []byte {
	b, _ := json.Marshal(envelope{Type: "error", Error: errorBody{Type: ErrorType(e.Status), Message: e.Message}, RequestID: requestID})
	return b
}

// ErrorEvent renders a refusal as the error event that ends a stream whose
// headers are gone.
func ErrorEvent(e *openaiapi.Error) []byte {
	b, _ := json.Marshal(envelope{Type: "error", Error: errorBody{Type: ErrorType(e.Status), Message: e.Message}})
	return AppendEvent(nil, "error", b)
}

// AppendEvent appends one named SSE event to dst.
func AppendEvent(dst []byte, name string, data []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}
