package translator

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// StatusOverloaded is Anthropic's non-standard "overloaded" status.
const StatusOverloaded = 529

// ClientStatus maps a provider's error status to the status the client
// gets. A provider refusing the gateway's own credentials, or not knowing
// the configured model, is the gateway's fault, not the client's: 502.
func ClientStatus(status int) int {
	switch {
	case status == http.StatusBadRequest, status == http.StatusRequestEntityTooLarge, status == http.StatusTooManyRequests,
		status == http.StatusGatewayTimeout, status == http.StatusConflict:
		return status
	case status == http.StatusUnprocessableEntity:
		return http.StatusBadRequest
	case status == StatusOverloaded, status == http.StatusServiceUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusBadGateway
	}
}

// ErrorType returns the OpenAI error type for a client status.
func ErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusConflict:
		return openaiapi.TypeInvalidRequest
	case http.StatusTooManyRequests:
		return openaiapi.TypeRateLimit
	case http.StatusServiceUnavailable:
		return openaiapi.TypeServiceUnavailable
	default:
		return openaiapi.TypeUpstream
	}
}

// UpstreamError builds the client's envelope for a provider error. The
// provider's message is kept where it helps the client fix its request
// (4xx about the request, rate limits) and scrubbed of anything that looks
// like a credential; elsewhere a plain message replaces it.
func UpstreamError(provider string, status int, message, code string) *openaiapi.Error {
	cs := ClientStatus(status)
	e := &openaiapi.Error{Status: cs, Type: ErrorType(cs), Code: code}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Message = "provider " + provider + " refused the gateway's credentials"
		e.Code = "upstream_auth_error"
	case message != "" && (cs == http.StatusBadRequest || cs == http.StatusTooManyRequests || cs == http.StatusRequestEntityTooLarge || cs == http.StatusServiceUnavailable):
		e.Message = Scrub(message)
	default:
		e.Message = "provider " + provider + " answered with status " + http.StatusText(status) + " (" + strconv.Itoa(status) + ")"
		if message != "" {
			e.Message += ": " + Scrub(message)
		}
	}
	if e.Code == "" {
		switch cs {
		case http.StatusTooManyRequests:
			e.Code = "rate_limit_exceeded"
		case http.StatusServiceUnavailable:
			e.Code = "upstream_overloaded"
		case http.StatusBadGateway:
			e.Code = "upstream_error"
		}
	}
	return e
}

// GarbageError is the envelope for a provider answer that cannot be read.
func GarbageError(provider, what string) *openaiapi.Error {
	return openaiapi.Errorf(http.StatusBadGateway, openaiapi.TypeUpstream, "upstream_invalid_response",
		"provider %s returned an invalid response: %s", provider, what)
}

var secretLike = regexp.MustCompile(`(sk-[A-Za-z0-9_*-]{6,}|sk-ant-[A-Za-z0-9_*-]{6,}|AIza[0-9A-Za-z_-]{10,}|[Bb]earer [A-Za-z0-9._~+/=-]{8,})`)

// Scrub removes anything that looks like a credential from a provider
// message before a client or a log sees it.
func Scrub(s string) string {
	if len(s) > 1000 {
		s = s[:1000]
	}
	return secretLike.ReplaceAllString(s, "[redacted]")
}

// ReadError reads back an error envelope a chat translator wrote, for a
// route that renders errors in another API's envelope.
func ReadError(status int, body []byte) *openaiapi.Error {
	var env struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	e := &openaiapi.Error{Status: status, Type: ErrorType(status), Message: http.StatusText(status)}
	if json.Unmarshal(body, &env) == nil && env.Error.Message != "" {
		e.Type, e.Message = env.Error.Type, env.Error.Message
		if env.Error.Code != nil {
			e.Code = *env.Error.Code
		}
		if env.Error.Param != nil {
			e.Param = *env.Error.Param
		}
	}
	return e
}

// StatusOf is the status an OpenAI error type stands for, so a stream's
// error event keeps its kind when another API renders it.
func StatusOf(typ string) int {
	switch typ {
	case openaiapi.TypeInvalidRequest:
		return http.StatusBadRequest
	case openaiapi.TypeRateLimit, openaiapi.TypeInsufficientQuota:
		return http.StatusTooManyRequests
	case openaiapi.TypeServiceUnavailable:
		return http.StatusServiceUnavailable
	case openaiapi.TypeAuthentication:
		return http.StatusUnauthorized
	}
	return http.StatusBadGateway
}
