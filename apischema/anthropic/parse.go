package anthropic

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/apischema/openai"
)

// MaxMessages is Anthropic's own limit on the turns of one request.
const MaxMessages = 100_000

// ParseMessagesRequest decodes and checks a /v1/messages body. A token
// count (countOnly) needs no max_tokens. The error is a 400 naming the
// parameter, which the route renders in Anthropic's envelope.
func ParseMessagesRequest(body []byte, countOnly bool) (*MessagesRequest, *openai.Error) {
	if len(body) == 0 {
		return nil, invalid("", "the request body is empty; send a JSON Messages request")
	}
	var r MessagesRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, decodeError(err)
	}
	if r.Model == "" {
		return nil, invalid("model", "model: Field required")
	}
	if !countOnly {
		if r.MaxTokens == nil {
			return nil, invalid("max_tokens", "max_tokens: Field required")
		}
		if *r.MaxTokens < 1 {
			return nil, invalid("max_tokens", "max_tokens: must be at least 1")
		}
	}
	if len(r.Messages) == 0 || len(r.Messages) > MaxMessages {
		return nil, invalid("messages", "messages: must hold between 1 and %d messages", MaxMessages)
	}
	for i, b := range r.System {
		if b.Type != "text" {
			return nil, invalid("system", "system.%d: only text blocks are allowed, got %q", i, b.Type)
		}
	}
	for i := range r.Messages {
		if e := checkMessage(&r.Messages[i], i); e != nil {
			return nil, e
		}
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1) {
		return nil, invalid("temperature", "temperature: must be between 0 and 1")
	}
	if r.TopP != nil && (*r.TopP < 0 || *r.TopP > 1) {
		return nil, invalid("top_p", "top_p: must be between 0 and 1")
	}
	for i, t := range r.Tools {
		if t.Name == "" {
			return nil, invalid("tools", "tools.%d.name: Field required", i)
		}
	}
	if c := r.ToolChoice; c != nil {
		switch {
		case c.Type == "tool" && c.Name == "":
			return nil, invalid("tool_choice", "tool_choice.name: Field required for type tool")
		case c.Type != "auto" && c.Type != "any" && c.Type != "tool" && c.Type != "none":
			return nil, invalid("tool_choice", `tool_choice.type: must be "auto", "any", "tool" or "none"`)
		}
	}
	return &r, nil
}

func checkMessage(m *Message, i int) *openai.Error {
	at := "messages." + strconv.Itoa(i)
	if m.Role != "user" && m.Role != "assistant" {
		return invalid("messages", "%s.role: must be \"user\" or \"assistant\", got %q", at, m.Role)
	}
	if m.Content == nil {
		return invalid("messages", "%s.content: Field required", at)
	}
	for j := range m.Content {
		if e := checkBlock(&m.Content[j], m.Role, at+".content."+strconv.Itoa(j)); e != nil {
			return e
		}
	}
	return nil
}

func checkBlock(b *Block, role, at string) *openai.Error {
	switch b.Type {
	case "text", "thinking", "redacted_thinking":
	case "image", "document":
		if role != "user" {
			return invalid("messages", "%s: %s blocks are only allowed in user messages", at, b.Type)
		}
		s := b.Source
		switch {
		case s == nil:
			return invalid("messages", "%s.source: Field required", at)
		case s.Type == "base64" && (s.MediaType == "" || s.Data == ""):
			return invalid("messages", "%s.source: a base64 source needs media_type and data", at)
		case s.Type == "url" && s.URL == "":
			return invalid("messages", "%s.source.url: Field required", at)
		case s.Type == "text" && b.Type == "document":
		case s.Type != "base64" && s.Type != "url":
			return invalid("messages", "%s.source.type: must be \"base64\" or \"url\", got %q", at, s.Type)
		}
	case "tool_use":
		if role != "assistant" {
			return invalid("messages", "%s: tool_use blocks are only allowed in assistant messages", at)
		}
		if b.ID == "" || b.Name == "" {
			return invalid("messages", "%s: a tool_use block needs an id and a name", at)
		}
	case "tool_result":
		if role != "user" {
			return invalid("messages", "%s: tool_result blocks are only allowed in user messages", at)
		}
		if b.ToolUseID == "" {
			return invalid("messages", "%s.tool_use_id: Field required", at)
		}
		for k := range b.Content {
			if t := b.Content[k].Type; t != "text" && t != "image" && t != "document" {
				return invalid("messages", "%s.content.%d: a tool result holds text, image or document blocks, got %q", at, k, t)
			}
		}
	default:
		return invalid("messages", "%s.type: unknown content block type %q", at, b.Type)
	}
	return nil
}

func invalid(param, format string, args ...any) *openai.Error {
	e := openai.Errorf(http.StatusBadRequest, openai.TypeInvalidRequest, "invalid_request", format, args...)
	if param != "" {
		e.Param = param
	}
	return e
}

// decodeError explains a JSON decoding failure without echoing the body.
func decodeError(err error) *openai.Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return invalid("", "the request body must be a JSON object")
		}
		return invalid(te.Field, "%s: invalid type, expected %s", te.Field, te.Type.Kind())
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return invalid("", "the request body is not valid JSON (at byte %d)", se.Offset)
	}
	return invalid("", "invalid request: %s", err.Error())
}
