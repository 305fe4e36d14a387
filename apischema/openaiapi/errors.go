package openaiapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Error types used in the envelope, as OpenAI names them.
const (
	TypeInvalidRequest     = "invalid_request_error"
	TypeAuthentication     = "authentication_error"
	TypePermission         = "permission_error"
	TypeNotFound           = "not_found_error"
	TypeRateLimit          = "rate_limit_error"
	TypeInsufficientQuota  = "insufficient_quota"
	TypeServer             = "server_error"
	TypeServiceUnavailable = "service_unavailable"
	TypeUpstream           = "upstream_error"
)

// Error is a refusal in the OpenAI error envelope with its HTTP status.
// It is also a Go error, so filters can return it.
type Error struct {
	Status  int
	Type    string
	Code    string // empty encodes as null
	Param   string // empty encodes as null
	Message string
	// Headers are extra response headers, such as retry-after.
	Headers map[string]string
}

// maxQuoted is the most of a client's string an error message or a log
// line repeats.
const maxQuoted = 64

// Clip shortens a client's string for an error message or a log line, at
// a rune boundary, marking the cut with "…": what a client sends is
// bounded only by the body size.
func Clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Errorf builds an Error with a formatted message.
func Errorf(status int, typ, code, format string, args ...any) *Error {
	return &Error{Status: status, Type: typ, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	return strconv.Itoa(e.Status) + " " + e.Type + ": " + e.Message
}

// WithParam returns e naming the offending request parameter.
func (e *Error) WithParam(p string) *Error {
	e.Param = p
	return e
}

// WithHeader returns e with an extra response header.
func (e *Error) WithHeader(k, v string) *Error {
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	e.Headers[k] = v
	return e
}

type envelope struct {
	Error envelopeBody `json:"error"`
}

type envelopeBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Body returns the envelope {"error":{"message","type","param","code"}}.
func (e *Error) Body() []byte {
	b, _ := json.Marshal(envelope{Error: envelopeBody{Message: e.Message, Type: e.Type, Param: nullable(e.Param), Code: nullable(e.Code)}})
	return b
}

// StreamEvent returns the error as one SSE event, the form the OpenAI SDKs
// raise on once a stream has started.
func (e *Error) StreamEvent() []byte {
	b := e.Body()
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}
