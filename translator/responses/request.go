package responses

import (
	"strings"

	"github.com/switchyard/switchyard/apischema/openai"
	"github.com/switchyard/switchyard/apischema/responses"
)

// ToChat is the canonical chat request of a Responses request: the one the
// router, quota and usage filters read and the chat translators translate.
// The instructions become the first system message, the input items the
// conversation: function_call items the assistant's tool calls (calls in a
// row, one turn's parallel calls), function_call_output items tool
// messages. A streamed request always asks for the usage chunk, which
// response.completed needs.
func ToChat(r *responses.Request) *openai.ChatRequest {
	c := &openai.ChatRequest{
		Model:               r.Model,
		MaxCompletionTokens: r.MaxOutputTokens,
		Temperature:         r.Temperature,
		TopP:                r.TopP,
		Stream:              r.Stream,
		ParallelToolCalls:   r.ParallelToolCalls,
		User:                r.User,
		ServiceTier:         r.ServiceTier,
		Metadata:            r.Metadata,
	}
	if c.User == "" {
		c.User = r.SafetyIdentifier
	}
	if r.Stream {
		c.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if r.Reasoning != nil {
		c.ReasoningEffort = r.Reasoning.Effort
	}
	if r.Instructions != nil && *r.Instructions != "" {
		c.Messages = append(c.Messages, openai.Message{Role: "system", Content: openai.Content{Text: *r.Instructions, Set: true}})
	}
	for i := range r.Input.Items {
		c.Messages = appendItem(c.Messages, &r.Input.Items[i])
	}
	for _, t := range r.Tools {
		c.Tools = append(c.Tools, openai.Tool{Type: "function", Function: openai.FunctionDef{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict,
		}})
	}
	if tc := r.ToolChoice; tc != nil && len(c.Tools) > 0 {
		c.ToolChoice = &openai.ToolChoice{Mode: tc.Mode, Function: tc.Function}
	}
	if t := r.Text; t != nil && t.Format != nil {
		switch f := t.Format; f.Type {
		case "json_object":
			c.ResponseFormat = &openai.ResponseFormat{Type: "json_object"}
		case "json_schema":
			c.ResponseFormat = &openai.ResponseFormat{Type: "json_schema", JSONSchema: &openai.JSONSchema{
				Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict,
			}}
		}
	}
	return c
}

// appendItem appends the chat message of one input item. A function call
// joins the assistant turn before it when that turn is the last message,
// so a turn's text and its calls, or its parallel calls, stay one turn.
func appendItem(out []openai.Message, it *responses.Item) []openai.Message {
	switch it.Type {
	case responses.ItemFunctionCall:
		call := openai.ToolCall{ID: it.CallID, Type: "function", Function: openai.FunctionCall{Name: it.Name, Arguments: arguments(it.Arguments)}}
		if n := len(out); n > 0 && out[n-1].Role == "assistant" {
			out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
			return out
		}
		return append(out, openai.Message{Role: "assistant", Content: openai.Content{Null: true, Set: true}, ToolCalls: []openai.ToolCall{call}})
	case responses.ItemFunctionCallOutput:
		return append(out, openai.Message{Role: "tool", ToolCallID: it.CallID, Content: openai.Content{Text: joinText(it.Output), Set: true}})
	case responses.ItemReasoning:
		return out
	}
	if it.Role != "user" {
		// Only a user's turn holds more than text (the parser sees to it).
		return append(out, openai.Message{Role: it.Role, Content: openai.Content{Text: joinText(it.Content), Set: true}})
	}
	msg := openai.Message{Role: it.Role, Content: openai.Content{IsParts: true, Set: true}}
	for _, p := range it.Content {
		msg.Content.Parts = append(msg.Content.Parts, part(p))
	}
	if len(msg.Content.Parts) == 1 && msg.Content.Parts[0].Type == "text" {
		msg.Content = openai.Content{Text: msg.Content.Parts[0].Text, Set: true}
	}
	return append(out, msg)
}

// part is the chat content part of a message's input part.
func part(p responses.Part) openai.Part {
	switch p.Type {
	case "input_image":
		return openai.Part{Type: "image_url", ImageURL: &openai.ImageURL{URL: p.ImageURL, Detail: p.Detail}}
	case "input_file":
		return openai.Part{Type: "file", File: &openai.FilePart{Filename: p.Filename, FileData: p.FileData}}
	case "refusal":
		return openai.Part{Type: "text", Text: p.Refusal}
	}
	return openai.Part{Type: "text", Text: p.Text}
}

// joinText is the text of an assistant's parts or a call's output.
func joinText(ps responses.Contents) string {
	var sb strings.Builder
	for _, p := range ps {
		s := p.Text
		if p.Type == "refusal" {
			s = p.Refusal
		}
		if s == "" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(s)
	}
	return sb.String()
}

// arguments is a call's arguments as a chat tool call carries them; none
// is an empty object.
func arguments(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}
