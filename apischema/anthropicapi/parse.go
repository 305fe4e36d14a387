package anthropicapi

import (
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// MaxMessages is Anthropic's own limit on the turns of one request.
const MaxMessages = 100_000

// maxNameBytes bounds the client's strings that name things and travel
// into ledger rows, logs and error messages, as on the chat route.
const maxNameBytes = 256

// form is a Messages request's: a tool's input schema, a tool call's
// input, an output format's schema and metadata are the client's own
// documents.
var form = openaiapi.Form{
	What:        "Messages request",
	FreeForm:    map[string]bool{"input_schema": true, "input": true, "schema": true, "metadata": true},
	MaxElements: openaiapi.MaxElements,
}

// ParseMessagesRequest decodes and checks a /v1/messages body. A token
// count (countOnly) needs no max_tokens. The error is a 400 naming the
// parameter, which the route renders in Anthropic's envelope.
//
// It reads what the gateway needs (the model, the output cap, the turns
// and tools it may have to translate) and refuses only what no provider
// could serve; members, roles and block types it does not know are left
// for the provider, and for a translation to refuse by name if it cannot
// map them ([messages.Portable]), so that a client using a feature newer
// than the gateway still reaches Anthropic.
func ParseMessagesRequest(body []byte, countOnly bool) (*MessagesRequest, *openaiapi.Error) {
	var r MessagesRequest
	if e := openaiapi.DecodeBody(body, &r, form); e != nil {
		return nil, e
	}
	switch {
	case r.Model == "":
		return nil, invalid("model", "model: Field required")
	case len(r.Model) > maxNameBytes:
		return nil, invalid("model", "model: must be at most %d bytes", maxNameBytes)
	case r.Metadata != nil && len(r.Metadata.UserID) > maxNameBytes:
		return nil, invalid("metadata", "metadata.user_id: must be at most %d bytes", maxNameBytes)
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
	if c := r.ToolChoice; c != nil && c.Type == "tool" && c.Name == "" {
		return nil, invalid("tool_choice", "tool_choice.name: Field required for type tool")
	}
	return &r, nil
}

// checkMessage checks what a turn must hold whatever its role; blocks of
// the types the gateway translates must hold what a translation reads.
func checkMessage(m *Message, i int) *openaiapi.Error {
	at := "messages." + strconv.Itoa(i)
	if m.Role == "" {
		return invalid("messages", "%s.role: Field required", at)
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

func checkBlock(b *Block, role, at string) *openaiapi.Error {
	switch b.Type {
	case "":
		return invalid("messages", "%s.type: Field required", at)
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
		case s.Type == "":
			return invalid("messages", "%s.source.type: Field required", at)
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
	}
	return nil
}

func invalid(param, format string, args ...any) *openaiapi.Error {
	e := openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_request", format, args...)
	if param != "" {
		e.Param = param
	}
	return e
}
