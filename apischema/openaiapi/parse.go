package openaiapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// ParseChatRequest decodes and checks a chat completion request body. The
// returned error is a 400 in the OpenAI envelope naming the parameter.
func ParseChatRequest(body []byte) (*ChatRequest, *Error) {
	var r ChatRequest
	if e := DecodeBody(body, &r, ChatForm); e != nil {
		return nil, e
	}
	if e := checkIdentity(r.Model, r.User); e != nil {
		return nil, e
	}
	if len(r.Messages) == 0 {
		return nil, Errorf(http.StatusBadRequest, TypeInvalidRequest, "missing_required_parameter", "'messages' must be a non-empty array").WithParam("messages")
	}
	for i := range r.Messages {
		if e := checkMessage(&r.Messages[i], i); e != nil {
			return nil, e
		}
	}
	if e := checkRanges(&r); e != nil {
		return nil, e
	}
	for i, t := range r.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return nil, Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "tools[%d] must be {\"type\":\"function\",\"function\":{\"name\":...}}", i).WithParam("tools[" + strconv.Itoa(i) + "]")
		}
	}
	if r.StreamOptions != nil && !r.Stream {
		return nil, Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "stream_options is only allowed when stream is true").WithParam("stream_options")
	}
	return &r, nil
}

// maxNameBytes bounds the client's strings that name things and travel
// into ledger rows, logs and error messages.
const maxNameBytes = 256

// checkIdentity checks the model (required) and the end-user id.
func checkIdentity(model, user string) *Error {
	switch {
	case model == "":
		return Errorf(http.StatusBadRequest, TypeInvalidRequest, "missing_required_parameter", "you must provide a model parameter").WithParam("model")
	case len(model) > maxNameBytes:
		return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "model must be at most %d bytes", maxNameBytes).WithParam("model")
	case len(user) > maxNameBytes:
		return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "user must be at most %d bytes", maxNameBytes).WithParam("user")
	}
	return nil
}

func checkMessage(m *Message, i int) *Error {
	param := "messages[" + strconv.Itoa(i) + "]"
	bad := func(format string, args ...any) *Error {
		return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", param+": "+format, args...).WithParam(param)
	}
	switch m.Role {
	case "system", "developer", "user":
		if m.Content.Null || !m.Content.Set {
			return bad("content is required for role %q", m.Role)
		}
	case "assistant":
		if m.Content.Null && len(m.ToolCalls) == 0 && m.Refusal == nil {
			return bad("an assistant message needs content or tool_calls")
		}
		for j, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Function.Name == "" {
				return bad("tool_calls[%d] needs an id and a function name", j)
			}
		}
	case "tool":
		if m.ToolCallID == "" {
			return bad("a tool message needs tool_call_id")
		}
	case "":
		return bad("role is required")
	default:
		return bad("unknown role %q (want system, developer, user, assistant or tool)", Clip(m.Role))
	}
	for j, p := range m.Content.Parts {
		switch p.Type {
		case "text", "refusal":
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return bad("content[%d] image_url.url is required", j)
			}
		case "input_audio", "file":
		default:
			return bad("content[%d] has unknown type %q", j, Clip(p.Type))
		}
	}
	return nil
}

func checkRanges(r *ChatRequest) *Error {
	bad := func(param, format string, args ...any) *Error {
		return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", format, args...).WithParam(param)
	}
	if r.MaxTokens != nil && *r.MaxTokens < 1 {
		return bad("max_tokens", "max_tokens must be at least 1")
	}
	if r.MaxCompletionTokens != nil && *r.MaxCompletionTokens < 1 {
		return bad("max_completion_tokens", "max_completion_tokens must be at least 1")
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return bad("temperature", "temperature must be between 0 and 2")
	}
	if r.TopP != nil && (*r.TopP < 0 || *r.TopP > 1) {
		return bad("top_p", "top_p must be between 0 and 1")
	}
	if r.N != nil && (*r.N < 1 || *r.N > 128) {
		return bad("n", "n must be between 1 and 128")
	}
	if len(r.Stop) > 4 {
		return bad("stop", "stop accepts at most 4 sequences")
	}
	// A tier other than the default changes what the provider charges,
	// which the policy's prices (and so budgets and the ledger) do not
	// know.
	switch r.ServiceTier {
	case "", "auto", "default":
	default:
		return bad("service_tier", "service_tier must be \"auto\" or \"default\": other tiers are priced differently from what this gateway's budgets account for")
	}
	if present(r.WebSearchOptions) {
		return bad("web_search_options", "web search is not available through this gateway: it is priced per search, which this gateway's budgets do not account for")
	}
	if present(r.Audio) {
		return bad("audio", "audio output is not available through this gateway: audio tokens are priced apart from what this gateway's budgets account for")
	}
	return CheckPromptCache(r.PromptCacheOptions)
}

// present reports whether an optional member was sent with a value.
func present(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// decodeError explains a JSON decoding failure without echoing the body.
func decodeError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field == "" {
		return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_type", "the request body must be a JSON object")
	}
	if errors.As(err, &te) {
		return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_type", "invalid type for '%s': expected %s", te.Field, jsonKind(te.Type.Kind().String())).WithParam(te.Field)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_json", "the request body is not valid JSON (at byte %d)", se.Offset)
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); strings.HasPrefix(msg, "json: ") && i > 0 {
		msg = msg[i+2:]
	}
	return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "invalid request: %s", strings.TrimPrefix(msg, "json: "))
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	default:
		return "a number"
	}
}

// CheckPromptCache refuses a prompt-cache lifetime other than OpenAI's
// default 30 minutes: a longer one's writes cost more than the catalog's
// cache_write, which budgets and the ledger charge. The error is a 400
// naming prompt_cache_options.ttl.
func CheckPromptCache(o *PromptCacheOptions) *Error {
	if o == nil || o.TTL == "" || o.TTL == "30m" {
		return nil
	}
	return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value",
		"prompt_cache_options.ttl must be \"30m\": a longer prompt cache lifetime bills its writes above what this gateway's budgets account for").WithParam("prompt_cache_options.ttl")
}
