package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// upstreamError maps a provider's error answer to the client's envelope.
func (tr *Translator) upstreamError(status int, h translator.Headers, body []byte) *openaiapi.Error {
	pe := parseError(body)
	code := ""
	if status == http.StatusBadRequest || status == http.StatusUnprocessableEntity {
		// Azure's filtered prompt keeps its code: content_filter.
		code = pe.code
	}
	e := translator.UpstreamError(tr.t.Provider.Name, status, pe.message, code)
	if e.Status == http.StatusBadRequest {
		e.Param = tr.clientParam(pe.param)
		if e.Code == "" && strings.Contains(pe.message, "maximum context length") {
			// vLLM's and others' wording of OpenAI's own error; clients
			// trim history on this code.
			e.Code = "context_length_exceeded"
		}
	}
	if status == http.StatusTooManyRequests && (pe.code == openaiapi.TypeInsufficientQuota || pe.typ == openaiapi.TypeInsufficientQuota) {
		// An exhausted quota does not come back by retrying.
		e.Type, e.Code = openaiapi.TypeInsufficientQuota, openaiapi.TypeInsufficientQuota
		e.WithHeader("x-should-retry", "false")
	}
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		retryHeaders(e, h)
	}
	return e
}

// retryHeaders passes the provider's retry delay on. Azure sends
// retry-after-ms beside retry-after; a client that reads only retry-after
// gets it rounded up to whole seconds when the provider sent only ms.
func retryHeaders(e *openaiapi.Error, h translator.Headers) {
	ra, ms := h.Get("retry-after"), h.Get("retry-after-ms")
	if ms != "" {
		if n, err := strconv.ParseFloat(ms, 64); err == nil && n >= 0 {
			e.WithHeader("retry-after-ms", ms)
			if ra == "" {
				ra = strconv.FormatInt(int64((n+999)/1000), 10)
			}
		}
	}
	if ra != "" {
		e.WithHeader("retry-after", ra)
	}
}

// clientParam names a parameter the provider refused by the client's name
// for it, undoing the translator's renames.
func (tr *Translator) clientParam(p string) string {
	switch {
	case p == "":
		return ""
	case (p == "max_tokens" || p == "max_completion_tokens") && tr.capField != "":
		return tr.capField
	case p == tr.q.seedField:
		return "seed"
	}
	return p
}

// providerError is what the gateway reads from a provider's error body.
type providerError struct {
	message, typ, code, param string
	// status is a numeric code that is an HTTP error status (vLLM's), else 0.
	status int
}

type errorFields struct {
	Error   json.RawMessage `json:"error"`
	Message json.RawMessage `json:"message"`
	Type    json.RawMessage `json:"type"`
	Code    json.RawMessage `json:"code"`
	Param   json.RawMessage `json:"param"`
	Detail  json.RawMessage `json:"detail"`
}

// parseError reads the error shapes OpenAI-protocol servers send:
// {"error":{...}} (OpenAI, Azure, current vLLM), {"error":"text"}, the
// older top-level {"object":"error","message",...} (Mistral, older vLLM;
// Mistral's message may itself be a validation report), and FastAPI's
// {"detail":...}. Anything else (HTML from a proxy, an empty body) yields
// no message: the client gets the status's own.
func parseError(body []byte) providerError {
	var top errorFields
	if json.Unmarshal(body, &top) != nil {
		return providerError{}
	}
	src := top
	switch {
	case len(top.Error) > 0 && top.Error[0] == '{':
		src = errorFields{}
		if json.Unmarshal(top.Error, &src) != nil {
			return providerError{}
		}
	case len(top.Error) > 0 && top.Error[0] == '"':
		src.Message = top.Error
	case len(top.Message) == 0 && len(top.Detail) > 0:
		src.Message = top.Detail
	}
	pe := providerError{typ: text(src.Type), param: text(src.Param)}
	pe.message, pe.param = messageText(src.Message, pe.param)
	switch c := bytes.TrimSpace(src.Code); {
	case len(c) > 0 && c[0] == '"':
		// Numeric strings ("429", Mistral's "3001") say nothing a client
		// can act on.
		if s := text(c); s != "" && !isNumber(s) {
			pe.code = s
		}
	case len(c) > 0:
		if n, err := strconv.Atoi(string(c)); err == nil && n >= 400 && n <= 599 {
			pe.status = n
		}
	}
	return pe
}

func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// messageText renders an error message. Validation reports (pydantic's
// [{"loc":["body","stream_options"],"msg":"Extra inputs are not
// permitted"}], possibly wrapped in {"detail":...} or in a string) become
// "stream_options: Extra inputs are not permitted", and name the parameter
// when the provider did not.
func messageText(raw json.RawMessage, param string) (string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", param
	}
	if raw[0] == '"' {
		s := text(raw)
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			if msg, p := messageText(json.RawMessage(t), param); msg != "" {
				return msg, p
			}
		}
		return s, param
	}
	var wrapped struct {
		Detail  json.RawMessage `json:"detail"`
		Message json.RawMessage `json:"message"`
	}
	if raw[0] == '{' && json.Unmarshal(raw, &wrapped) == nil {
		if len(wrapped.Detail) > 0 {
			return messageText(wrapped.Detail, param)
		}
		return messageText(wrapped.Message, param)
	}
	var report []struct {
		Loc []json.RawMessage `json:"loc"`
		Msg string            `json:"msg"`
	}
	if raw[0] != '[' || json.Unmarshal(raw, &report) != nil {
		return "", param
	}
	var b strings.Builder
	for _, r := range report {
		var loc []string
		for _, l := range r.Loc {
			if s := text(l); s != "" && s != "body" {
				loc = append(loc, s)
			} else if s == "" {
				loc = append(loc, string(l))
			}
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		if len(loc) > 0 {
			b.WriteString(strings.Join(loc, "."))
			b.WriteString(": ")
			if param == "" {
				param = loc[0]
			}
		}
		b.WriteString(r.Msg)
	}
	return b.String(), param
}

// streamError maps an error event inside a 200 stream. The event has no
// status of its own: it is taken from a numeric code (vLLM) or from what
// the code and type say, else the event counts as a server error.
func (tr *Translator) streamError(data []byte) *openaiapi.Error {
	pe := parseError(data)
	status := pe.status
	switch {
	case status != 0:
	case pe.code == "rate_limit_exceeded" || pe.typ == openaiapi.TypeRateLimit:
		status = http.StatusTooManyRequests
	case pe.typ == "overloaded_error" || pe.typ == openaiapi.TypeServiceUnavailable:
		status = http.StatusServiceUnavailable
	default:
		status = http.StatusInternalServerError
	}
	return translator.UpstreamError(tr.t.Provider.Name, status, pe.message, "")
}
