package responses

import (
	"strings"

	"github.com/switchyard/switchyard/apischema/openai"
	"github.com/switchyard/switchyard/apischema/responses"
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
			c.ResponseFormat = &openai.ResponseFormat{Type: "json_object"}
		case "json_schema":
			c.ResponseFormat = &openai.ResponseFormat{Type: "json_schema", JSONSchema: &openai.JSONSchema{
				Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict,
			}}
		}
	}
	return c
}

// chatTools are the chat tools of a request's function tools and of its
// namespaces' functions.
func chatTools(tools []responses.Tool, names toolNames) []openai.Tool {
	var out []openai.Tool
	add := func(ns string, t *responses.Tool) {
		out = append(out, openai.Tool{Type: "function", Function: openai.FunctionDef{
			Name: names.chat(ns, t.Name), Description: t.Description, Parameters: t.Parameters, Strict: t.Strict,
		}})
	}
	for i := range tools {
		switch t := &tools[i]; t.Type {
		case responses.ToolFunction:
			add("", t)
		case responses.ToolNamespace:
			for j := range t.Tools {
				if t.Tools[j].Type == responses.ToolFunction {
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
func toolChoice(tc *responses.ToolChoice, tools []openai.Tool, names toolNames) ([]openai.Tool, *openai.ToolChoice) {
	if tc.Function != "" {
		name := names.chat(tc.Namespace, tc.Function)
		for _, t := range tools {
			if t.Function.Name == name {
				return tools, &openai.ToolChoice{Function: name}
			}
		}
		return tools, nil
	}
	if tc.Allowed != nil {
		allowed := map[string]bool{}
		for _, q := range tc.Allowed {
			allowed[names.chat(q[0], q[1])] = true
		}
		var kept []openai.Tool
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
		return tools, &openai.ToolChoice{Mode: tc.Mode}
	}
	return tools, nil
}

// appendItem appends the chat message of one input item, if a chat
// request holds it. A function call joins the assistant turn before it
// when that turn is the last message, so a turn's text and its calls, or
// its parallel calls, stay one turn.
func appendItem(out []openai.Message, it *responses.Item, names toolNames) []openai.Message {
	switch it.Type {
	case responses.ItemFunctionCall:
		call := openai.ToolCall{ID: it.CallID, Type: "function", Function: openai.FunctionCall{Name: names.chat(it.Namespace, it.Name), Arguments: arguments(it.Arguments)}}
		if n := len(out); n > 0 && out[n-1].Role == "assistant" {
			out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
			return out
		}
		return append(out, openai.Message{Role: "assistant", Content: openai.Content{Null: true, Set: true}, ToolCalls: []openai.ToolCall{call}})
	case responses.ItemFunctionCallOutput:
		return append(out, openai.Message{Role: "tool", ToolCallID: it.CallID, Content: openai.Content{Text: joinText(it.Output), Set: true}})
	case "", responses.ItemMessage:
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
		return append(out, openai.Message{Role: role, Content: openai.Content{Text: joinText(it.Content), Set: true}})
	}
	msg := openai.Message{Role: it.Role, Content: openai.Content{IsParts: true, Set: true}}
	for _, p := range it.Content {
		if chatPart[p.Type] {
			msg.Content.Parts = append(msg.Content.Parts, part(p))
		}
	}
	if len(msg.Content.Parts) == 1 && msg.Content.Parts[0].Type == "text" {
		msg.Content = openai.Content{Text: msg.Content.Parts[0].Text, Set: true}
	}
	return append(out, msg)
}

// chatPart holds the types of a user's parts a chat message holds.
var chatPart = map[string]bool{"input_text": true, "output_text": true, "text": true, "refusal": true, "input_image": true, "input_file": true}

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
