package messages

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/anthropic"
	"github.com/switchyard/switchyard/apischema/openai"
)

// ToChat is the canonical chat request of a Messages request: the one the
// router, quota and usage filters read and the chat translators translate.
// A streamed request always asks for the usage chunk, which the answer's
// message_delta needs. What only Anthropic serves (server tools, documents
// by URL) is left out here and refused by [Portable] when another
// provider is to serve the request.
func ToChat(r *anthropic.MessagesRequest) *openai.ChatRequest {
	c := &openai.ChatRequest{
		Model:       r.Model,
		Temperature: r.Temperature,
		TopP:        r.TopP,
		Stream:      r.Stream,
		Stop:        openai.StringList(r.StopSequences),
	}
	if r.MaxTokens != nil {
		c.MaxCompletionTokens = r.MaxTokens
	}
	if r.Stream {
		c.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if r.Metadata != nil {
		c.User = r.Metadata.UserID
	}
	if len(r.System) > 0 {
		c.Messages = append(c.Messages, openai.Message{Role: "system", Content: openai.Content{Text: joinText(r.System), Set: true}})
	}
	for i := range r.Messages {
		c.Messages = appendMessage(c.Messages, &r.Messages[i])
	}
	for _, t := range r.Tools {
		if !clientTool(t) {
			continue
		}
		c.Tools = append(c.Tools, openai.Tool{Type: "function", Function: openai.FunctionDef{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema,
		}})
	}
	if tc := r.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto":
			c.ToolChoice = &openai.ToolChoice{Mode: "auto"}
		case "any":
			c.ToolChoice = &openai.ToolChoice{Mode: "required"}
		case "none":
			c.ToolChoice = &openai.ToolChoice{Mode: "none"}
		case "tool":
			c.ToolChoice = &openai.ToolChoice{Function: tc.Name}
		}
		if tc.DisableParallelToolUse && tc.Type != "none" && len(c.Tools) > 0 {
			no := false
			c.ParallelToolCalls = &no
		}
	}
	return c
}

// Portable refuses what only Anthropic's own API serves, for a request
// that another provider is to serve.
func Portable(r *anthropic.MessagesRequest) *openai.Error {
	for i, t := range r.Tools {
		if !clientTool(t) {
			return unsupported("tools", "tools.%d: server tool %q is served only by Anthropic models", i, t.Type)
		}
	}
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if b.Type == "document" && b.Source.Type == "url" {
				return unsupported("messages", "messages.%d.content.%d: documents by URL are served only by Anthropic models; send the document as base64", i, j)
			}
		}
	}
	return nil
}

func clientTool(t anthropic.Tool) bool { return t.Type == "" || t.Type == "custom" }

// appendMessage appends the chat messages of one Messages turn. A user
// turn's tool results become tool messages, ahead of what else the turn
// says (OpenAI wants a call's result right after the call); an assistant
// turn's tool_use blocks become its tool calls.
func appendMessage(out []openai.Message, m *anthropic.Message) []openai.Message {
	if m.Role == "assistant" {
		msg := openai.Message{Role: "assistant"}
		var text []anthropic.Block
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				text = append(text, b)
			case "tool_use":
				msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: b.ID, Type: "function", Function: openai.FunctionCall{Name: b.Name, Arguments: arguments(b.Input)}})
			}
			// Thinking blocks are the model's own; other providers take
			// no signed reasoning back.
		}
		if len(text) > 0 {
			msg.Content = openai.Content{Text: joinText(text), Set: true}
		} else {
			msg.Content = openai.Content{Null: true, Set: true}
		}
		if msg.Content.Null && len(msg.ToolCalls) == 0 {
			// An empty assistant turn (thinking only) says nothing.
			return out
		}
		return append(out, msg)
	}
	user := openai.Message{Role: "user", Content: openai.Content{IsParts: true, Set: true}}
	for _, b := range m.Content {
		switch b.Type {
		case "tool_result":
			text := joinText(b.Content)
			if b.IsError {
				// OpenAI has no error flag; the model must still know.
				text = "Error: " + text
			}
			out = append(out, openai.Message{Role: "tool", ToolCallID: b.ToolUseID, Content: openai.Content{Text: text, Set: true}})
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
		user.Content = openai.Content{Text: user.Content.Parts[0].Text, Set: true}
	}
	return append(out, user)
}

// part is the chat content part of a user block. A document by URL, which
// [Portable] refuses, is kept as its URL for the filters' estimates.
func part(b anthropic.Block) openai.Part {
	if b.Type == "text" {
		return openai.Part{Type: "text", Text: b.Text}
	}
	s := b.Source
	switch {
	case s.Type == "text":
		return openai.Part{Type: "text", Text: s.Data}
	case s.Type == "url":
		return openai.Part{Type: "image_url", ImageURL: &openai.ImageURL{URL: s.URL}}
	case b.Type == "image":
		return openai.Part{Type: "image_url", ImageURL: &openai.ImageURL{URL: "data:" + s.MediaType + ";base64," + s.Data}}
	}
	return openai.Part{Type: "file", File: &openai.FilePart{Filename: "document", FileData: "data:" + s.MediaType + ";base64," + s.Data}}
}

func joinText(bs []anthropic.Block) string {
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

func unsupported(param, format string, args ...any) *openai.Error {
	return openai.Errorf(http.StatusBadRequest, openai.TypeInvalidRequest, "unsupported_parameter", format, args...).WithParam(param)
}
