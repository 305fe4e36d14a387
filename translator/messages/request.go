package messages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// ToChat is the canonical chat request of a Messages request: the one the
// router, quota and usage filters read and the chat translators translate.
// A streamed request always asks for the usage chunk, which the answer's
// message_delta needs. What only Anthropic serves (server tools, documents
// by URL) is left out here and refused by [Portable] when another
// provider is to serve the request.
func ToChat(r *anthropicapi.MessagesRequest) *openaiapi.ChatRequest {
	c := &openaiapi.ChatRequest{
		Model:       r.Model,
		Temperature: r.Temperature,
		TopP:        r.TopP,
		Stream:      r.Stream,
		Stop:        openaiapi.StringList(r.StopSequences),
	}
	if r.MaxTokens != nil {
		c.MaxCompletionTokens = r.MaxTokens
	}
	if r.Stream {
		c.StreamOptions = &openaiapi.StreamOptions{IncludeUsage: true}
	}
	if r.Metadata != nil {
		c.User = endUser(r.Metadata.UserID)
	}
	if len(r.System) > 0 {
		c.Messages = append(c.Messages, openaiapi.Message{Role: "system", Content: openaiapi.Content{Text: joinText(r.System), Set: true}})
	}
	for i := range r.Messages {
		c.Messages = appendMessage(c.Messages, &r.Messages[i])
	}
	for _, t := range r.Tools {
		if !clientTool(t) {
			continue
		}
		c.Tools = append(c.Tools, openaiapi.Tool{Type: "function", Function: openaiapi.FunctionDef{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema,
		}})
	}
	if tc := r.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto":
			c.ToolChoice = &openaiapi.ToolChoice{Mode: "auto"}
		case "any":
			c.ToolChoice = &openaiapi.ToolChoice{Mode: "required"}
		case "none":
			c.ToolChoice = &openaiapi.ToolChoice{Mode: "none"}
		case "tool":
			c.ToolChoice = &openaiapi.ToolChoice{Function: tc.Name}
		}
		if tc.DisableParallelToolUse && tc.Type != "none" && len(c.Tools) > 0 {
			no := false
			c.ParallelToolCalls = &no
		}
	}
	return c
}

// Portable refuses what only Anthropic's own API serves, or what the
// gateway does not know how to translate, for a request that provider
// (another kind than Anthropic) is to serve: the request is passed to
// Anthropic as it is, but a translation that guessed would change what
// the answer means. Settings that shape only how the model works
// (thinking, output_config.effort, context_management, cache_control) are
// left out of the translation, not refused.
func Portable(r *anthropicapi.MessagesRequest, provider string) *openaiapi.Error {
	for i, t := range r.Tools {
		if !clientTool(t) {
			return unsupported("tools", "tools.%d: server tool %q is served only by Anthropic models, not by provider %s", i, t.Type, provider)
		}
	}
	for i, b := range r.System {
		if b.Type != "text" {
			return unsupported("system", "system.%d: a %q block cannot be translated for provider %s; the system prompt takes text blocks there", i, b.Type, provider)
		}
	}
	if c := r.ToolChoice; c != nil && !knownChoices[c.Type] {
		return unsupported("tool_choice", "tool_choice.type %q cannot be translated for provider %s", c.Type, provider)
	}
	for i, m := range r.Messages {
		at := "messages." + strconv.Itoa(i)
		if !knownRoles[m.Role] {
			return unsupported("messages", "%s.role %q cannot be translated for provider %s", at, m.Role, provider)
		}
		for j, b := range m.Content {
			if e := portableBlock(b, m.Role, at+".content."+strconv.Itoa(j), provider); e != nil {
				return e
			}
		}
	}
	return nil
}

var (
	knownRoles   = map[string]bool{"user": true, "assistant": true, "system": true}
	knownChoices = map[string]bool{"auto": true, "any": true, "tool": true, "none": true}
	// knownBlocks are the block types a translation maps, by role: a
	// thinking block is the model's own and is left out, not refused.
	knownBlocks = map[string]map[string]bool{
		"user":      {"text": true, "image": true, "document": true, "tool_result": true},
		"assistant": {"text": true, "tool_use": true, "thinking": true, "redacted_thinking": true},
		"system":    {"text": true},
	}
)

func portableBlock(b anthropicapi.Block, role, at, provider string) *openaiapi.Error {
	if !knownBlocks[role][b.Type] {
		return unsupported("messages", "%s: a %q block in a %s turn cannot be translated for provider %s", at, b.Type, role, provider)
	}
	switch {
	case b.Source == nil:
	case b.Type == "document" && b.Source.Type == "url":
		return unsupported("messages", "%s: documents by URL are served only by Anthropic models, not by provider %s; send the document as base64", at, provider)
	case b.Source.Type != "base64" && b.Source.Type != "url" && !(b.Type == "document" && b.Source.Type == "text"):
		return unsupported("messages", "%s.source.type %q is served only by Anthropic models, not by provider %s", at, b.Source.Type, provider)
	}
	for k, inner := range b.Content {
		if inner.Type != "text" && inner.Type != "image" && inner.Type != "document" {
			return unsupported("messages", "%s.content.%d: a %q block in a tool result cannot be translated for provider %s", at, k, inner.Type, provider)
		}
	}
	return nil
}

// maxUserBytes is what OpenAI's user (and safety identifier) takes; a
// longer end-user id (Claude Code's metadata.user_id is a JSON object of
// device, account and session ids) travels as its digest, which keeps
// its use, telling users apart.
const maxUserBytes = 64

func endUser(id string) string {
	if len(id) <= maxUserBytes {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "user-" + hex.EncodeToString(sum[:16])
}

func clientTool(t anthropicapi.Tool) bool { return t.Type == "" || t.Type == "custom" }

// appendMessage appends the chat messages of one Messages turn. A user
// turn's tool results become tool messages, ahead of what else the turn
// says (OpenAI wants a call's result right after the call); an assistant
// turn's tool_use blocks become its tool calls.
func appendMessage(out []openaiapi.Message, m *anthropicapi.Message) []openaiapi.Message {
	if m.Role == "system" {
		// A system turn (Claude Code's updates mid-conversation) stays where
		// it was said; each chat translator maps it to what its provider
		// takes there.
		return append(out, openaiapi.Message{Role: "system", Content: openaiapi.Content{Text: joinText(m.Content), Set: true}})
	}
	if m.Role == "assistant" {
		msg := openaiapi.Message{Role: "assistant"}
		var text []anthropicapi.Block
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				text = append(text, b)
			case "tool_use":
				msg.ToolCalls = append(msg.ToolCalls, openaiapi.ToolCall{ID: b.ID, Type: "function", Function: openaiapi.FunctionCall{Name: b.Name, Arguments: arguments(b.Input)}})
			}
			// Thinking blocks are the model's own; other providers take
			// no signed reasoning back.
		}
		if len(text) > 0 {
			msg.Content = openaiapi.Content{Text: joinText(text), Set: true}
		} else {
			msg.Content = openaiapi.Content{Null: true, Set: true}
		}
		if msg.Content.Null && len(msg.ToolCalls) == 0 {
			// An empty assistant turn (thinking only) says nothing.
			return out
		}
		return append(out, msg)
	}
	user := openaiapi.Message{Role: "user", Content: openaiapi.Content{IsParts: true, Set: true}}
	for _, b := range m.Content {
		switch b.Type {
		case "tool_result":
			text := joinText(b.Content)
			if b.IsError {
				// OpenAI has no error flag; the model must still know.
				text = "Error: " + text
			}
			out = append(out, openaiapi.Message{Role: "tool", ToolCallID: b.ToolUseID, Content: openaiapi.Content{Text: text, Set: true}})
			for _, inner := range b.Content {
				if inner.Type == "image" || inner.Type == "document" {
					user.Content.Parts = append(user.Content.Parts, part(inner))
				}
			}
		case "text", "image", "document":
			user.Content.Parts = append(user.Content.Parts, part(b))
		}
	}
	if len(user.Content.Parts) == 0 {
		return out
	}
	if len(user.Content.Parts) == 1 && user.Content.Parts[0].Type == "text" {
		user.Content = openaiapi.Content{Text: user.Content.Parts[0].Text, Set: true}
	}
	return append(out, user)
}

// part is the chat content part of a user block. A document by URL, which
// [Portable] refuses, is kept as its URL for the filters' estimates.
func part(b anthropicapi.Block) openaiapi.Part {
	if b.Type == "text" {
		return openaiapi.Part{Type: "text", Text: b.Text}
	}
	s := b.Source
	switch {
	case s.Type == "text":
		return openaiapi.Part{Type: "text", Text: s.Data}
	case s.Type == "url":
		return openaiapi.Part{Type: "image_url", ImageURL: &openaiapi.ImageURL{URL: s.URL}}
	case b.Type == "image":
		return openaiapi.Part{Type: "image_url", ImageURL: &openaiapi.ImageURL{URL: "data:" + s.MediaType + ";base64," + s.Data}}
	}
	return openaiapi.Part{Type: "file", File: &openaiapi.FilePart{Filename: "document", FileData: "data:" + s.MediaType + ";base64," + s.Data}}
}

func joinText(bs []anthropicapi.Block) string {
	var sb strings.Builder
	for _, b := range bs {
		if b.Type != "text" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(b.Text)
	}
	return sb.String()
}

// arguments is a tool input as the JSON string a chat tool call carries;
// an absent input is an empty object.
func arguments(in json.RawMessage) string {
	var buf bytes.Buffer
	if len(bytes.TrimSpace(in)) == 0 || json.Compact(&buf, in) != nil {
		return "{}"
	}
	return buf.String()
}

func unsupported(param, format string, args ...any) *openaiapi.Error {
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_parameter", format, args...).WithParam(param)
}
