package responses

import (
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/apischema/responsesapi"
)

// ToChat is the canonical chat request of a Responses request: the one the
// router, quota and usage filters read and the chat translators translate.
// The instructions become the first system message, the input items the
// conversation: developer messages system ones, function_call items the
// assistant's tool calls (calls in a row, one turn's parallel calls),
// function_call_output items tool messages; reasoning and web search
// calls, which only OpenAI reads back, are left out, and so are items and
// parts of types a chat request cannot hold (a translation refuses them:
// [Translator.Request]). Function tools, and the functions of namespace
// tools flattened ([toolNames]), are the chat tools; OpenAI's hosted tools
// and tools of other types are left out, and the model answers without
// them. A streamed request always asks for the usage chunk, which
// response.completed needs.
func ToChat(r *responsesapi.Request) *openaiapi.ChatRequest {
	c := &openaiapi.ChatRequest{
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
		c.StreamOptions = &openaiapi.StreamOptions{IncludeUsage: true}
	}
	if r.Reasoning != nil {
		c.ReasoningEffort = r.Reasoning.Effort
	}
	if r.Instructions != nil && *r.Instructions != "" {
		c.Messages = append(c.Messages, openaiapi.Message{Role: "system", Content: openaiapi.Content{Text: *r.Instructions, Set: true}})
	}
	names := namesOf(r.Tools)
	for i := range r.Input.Items {
		c.Messages = appendItem(c.Messages, &r.Input.Items[i], names)
	}
	c.Tools = chatTools(r.Tools, names)
	if tc := r.ToolChoice; tc != nil && len(c.Tools) > 0 {
		c.Tools, c.ToolChoice = toolChoice(tc, c.Tools, names)
	}
	if t := r.Text; t != nil && t.Format != nil {
		switch f := t.Format; f.Type {
		case "json_object":
			c.ResponseFormat = &openaiapi.ResponseFormat{Type: "json_object"}
		case "json_schema":
			c.ResponseFormat = &openaiapi.ResponseFormat{Type: "json_schema", JSONSchema: &openaiapi.JSONSchema{
				Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict,
			}}
		}
	}
	return c
}

// chatTools are the chat tools of a request's function tools and of its
// namespaces' functions.
func chatTools(tools []responsesapi.Tool, names toolNames) []openaiapi.Tool {
	var out []openaiapi.Tool
	add := func(ns string, t *responsesapi.Tool) {
		out = append(out, openaiapi.Tool{Type: "function", Function: openaiapi.FunctionDef{
			Name: names.chat(ns, t.Name), Description: t.Description, Parameters: t.Parameters, Strict: t.Strict,
		}})
	}
	for i := range tools {
		switch t := &tools[i]; t.Type {
		case responsesapi.ToolFunction:
			add("", t)
		case responsesapi.ToolNamespace:
			for j := range t.Tools {
				if t.Tools[j].Type == responsesapi.ToolFunction {
					add(t.Name, &t.Tools[j])
				}
			}
		}
	}
	return out
}

// toolChoice is the chat tool choice of a Responses one, and the tools it
// leaves the model: an allowed_tools choice keeps only the tools it
// allows. A choice of a tool the chat request does not offer (a hosted or
// custom tool) leaves the choice to the model.
func toolChoice(tc *responsesapi.ToolChoice, tools []openaiapi.Tool, names toolNames) ([]openaiapi.Tool, *openaiapi.ToolChoice) {
	if tc.Function != "" {
		name := names.chat(tc.Namespace, tc.Function)
		for _, t := range tools {
			if t.Function.Name == name {
				return tools, &openaiapi.ToolChoice{Function: name}
			}
		}
		return tools, nil
	}
	if tc.Allowed != nil {
		allowed := map[string]bool{}
		for _, q := range tc.Allowed {
			allowed[names.chat(q[0], q[1])] = true
		}
		var kept []openaiapi.Tool
		for _, t := range tools {
			if allowed[t.Function.Name] {
				kept = append(kept, t)
			}
		}
		if len(kept) == 0 {
			return nil, nil
		}
		tools = kept
	}
	switch tc.Mode {
	case "none", "auto", "required":
		return tools, &openaiapi.ToolChoice{Mode: tc.Mode}
	}
	return tools, nil
}

// appendItem appends the chat message of one input item, if a chat
// request holds it. A function call joins the assistant turn before it
// when that turn is the last message, so a turn's text and its calls, or
// its parallel calls, stay one turn.
func appendItem(out []openaiapi.Message, it *responsesapi.Item, names toolNames) []openaiapi.Message {
	switch it.Type {
	case responsesapi.ItemFunctionCall:
		call := openaiapi.ToolCall{ID: it.CallID, Type: "function", Function: openaiapi.FunctionCall{Name: names.chat(it.Namespace, it.Name), Arguments: arguments(it.Arguments)}}
		if n := len(out); n > 0 && out[n-1].Role == "assistant" {
			out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
			return out
		}
		return append(out, openaiapi.Message{Role: "assistant", Content: openaiapi.Content{Null: true, Set: true}, ToolCalls: []openaiapi.ToolCall{call}})
	case responsesapi.ItemFunctionCallOutput:
		return append(out, openaiapi.Message{Role: "tool", ToolCallID: it.CallID, Content: openaiapi.Content{Text: joinText(it.Output), Set: true}})
	case "", responsesapi.ItemMessage:
	default:
		return out
	}
	if it.Role != "user" {
		// Only a user's turn holds more than text ([checkItems] sees to
		// it); the developer is the chat system prompt.
		role := it.Role
		if role == "developer" {
			role = "system"
		}
		return append(out, openaiapi.Message{Role: role, Content: openaiapi.Content{Text: joinText(it.Content), Set: true}})
	}
	msg := openaiapi.Message{Role: it.Role, Content: openaiapi.Content{IsParts: true, Set: true}}
	for _, p := range it.Content {
		if chatPart[p.Type] {
			msg.Content.Parts = append(msg.Content.Parts, part(p))
		}
	}
	if len(msg.Content.Parts) == 1 && msg.Content.Parts[0].Type == "text" {
		msg.Content = openaiapi.Content{Text: msg.Content.Parts[0].Text, Set: true}
	}
	return append(out, msg)
}

// chatPart holds the types of a user's parts a chat message holds.
var chatPart = map[string]bool{"input_text": true, "output_text": true, "text": true, "refusal": true, "input_image": true, "input_file": true}

// part is the chat content part of a message's input part.
func part(p responsesapi.Part) openaiapi.Part {
	switch p.Type {
	case "input_image":
		return openaiapi.Part{Type: "image_url", ImageURL: &openaiapi.ImageURL{URL: p.ImageURL, Detail: p.Detail}}
	case "input_file":
		return openaiapi.Part{Type: "file", File: &openaiapi.FilePart{Filename: p.Filename, FileData: p.FileData}}
	case "refusal":
		return openaiapi.Part{Type: "text", Text: p.Refusal}
	}
	return openaiapi.Part{Type: "text", Text: p.Text}
}

// joinText is the text of an assistant's parts or a call's output.
func joinText(ps responsesapi.Contents) string {
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
