package gemini

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// errorFor translates an error answer: Google's {"error":{...}} envelope
// when there is one, else the status alone (HTML from a proxy, an empty
// body).
func (tr *Translator) errorFor(status int, h translator.Headers, body []byte) *openaiapi.Error {
	return tr.mapError(status, parseError(body), h.Get("retry-after"))
}

// mapError maps a Gemini error to the client's envelope. Google's status
// name decides where it is more precise than the HTTP status; retryAfter
// is the provider's header, which wins over the RetryInfo detail.
func (tr *Translator) mapError(status int, e *apiError, retryAfter string) *openaiapi.Error {
	msg := ""
	if e != nil {
		msg = e.Message
		switch {
		case e.hasReason("API_KEY_INVALID"):
			// Gemini says 400 INVALID_ARGUMENT, but the key is the gateway's.
			status = http.StatusUnauthorized
		case e.Status == "RESOURCE_EXHAUSTED":
			status = http.StatusTooManyRequests
		case e.Status == "UNAVAILABLE":
			status = http.StatusServiceUnavailable
		case e.Status == "UNAUTHENTICATED":
			status = http.StatusUnauthorized
		case e.Status == "PERMISSION_DENIED":
			status = http.StatusForbidden
		case e.Status == "FAILED_PRECONDITION":
			// Billing or region: nothing the client can change in its request.
			return openaiapi.Errorf(http.StatusBadGateway, openaiapi.TypeUpstream, "upstream_error",
				"provider %s cannot serve this request: %s", tr.providerName(), translator.Scrub(msg))
		}
		if retryAfter == "" {
			retryAfter = e.retryAfter()
		}
	}
	out := translator.UpstreamError(tr.providerName(), status, msg, "")
	if retryAfter != "" && (out.Status == http.StatusTooManyRequests || out.Status == http.StatusServiceUnavailable) {
		out.WithHeader("retry-after", retryAfter)
	}
	return out
}

// parseError reads Google's error envelope, also in the one-element array
// form the non-SSE streaming endpoint answers with; nil when there is none.
func parseError(body []byte) *apiError {
	type envelope struct {
		Error *apiError `json:"error"`
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var list []envelope
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return nil
		}
		return list[0].Error
	}
	var env envelope
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	return env.Error
}

// errorStatus is the HTTP status an error object carries in its code,
// for errors that arrive inside a 200 (a stream event).
func errorStatus(e *apiError) int {
	if e.Code >= 400 && e.Code <= 599 {
		return e.Code
	}
	return http.StatusInternalServerError
}

func (e *apiError) hasReason(reason string) bool {
	for _, d := range e.Details {
		if d.Reason == reason {
			return true
		}
	}
	return false
}

// retryAfter converts RetryInfo.retryDelay, a protobuf Duration such as
// "17s" or "0.5s", to whole seconds for retry-after, rounding up.
func (e *apiError) retryAfter() string {
	for _, d := range e.Details {
		if d.RetryDelay == "" {
			continue
		}
		dur, err := time.ParseDuration(d.RetryDelay)
		if err != nil || dur < 0 {
			continue
		}
		return strconv.FormatInt(int64(math.Ceil(dur.Seconds())), 10)
	}
	return ""
}
