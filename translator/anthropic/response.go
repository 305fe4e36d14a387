package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// Complete implements [translator.Translator.Complete].
func (tr *Translator) Complete(status int, h translator.Headers, body []byte) translator.Result {
	if status < 200 || status > 299 {
		return tr.errorResult(tr.errorFrom(status, body), h)
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, "the body is not a JSON message"))
	}
	if r.Type == "error" && r.Error != nil {
		return tr.errorResult(tr.apiError(statusOf(r.Error.Type), r.Error), h)
	}
	if r.Type != "message" || r.Content == nil {
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, "the body is not a message"))
	}
	tr.usage.set(r.Usage)
	msg := openaiapi.ResponseMessage{Role: "assistant"}
	var text strings.Builder
	jsonContent := ""
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := compactObject(b.Input)
			if tr.jsonTool && b.Name == jsonToolName {
				if jsonContent == "" {
					jsonContent = args
				}
				continue
			}
			msg.ToolCalls = append(msg.ToolCalls, openaiapi.ToolCall{ID: b.ID, Type: "function", Function: openaiapi.FunctionCall{Name: b.Name, Arguments: args}})
		}
		// thinking, redacted_thinking and server-tool blocks have no place
		// in an OpenAI message: dropped.
	}
	content := text.String()
	if tr.jsonTool {
		// JSON mode answers with the JSON only; Anthropic sends no text
		// before a forced tool call anyway.
		content = jsonContent
	}
	if content != "" || len(msg.ToolCalls) == 0 {
		msg.Content = &content
	}
	u := tr.usage.openai()
	// Plain strings and numbers, and arguments already compacted: Marshal
	// cannot fail.
	out, _ := json.Marshal(openaiapi.ChatCompletion{
		ID:      tr.t.ID,
		Object:  "chat.completion",
		Created: tr.t.Created,
		Model:   tr.t.ClientModel,
		Choices: []openaiapi.Choice{{Message: msg, FinishReason: finishReason(r.StopReason, len(msg.ToolCalls) > 0)}},
		Usage:   &u,
	})
	return translator.Result{Status: http.StatusOK, Body: out}
}

// finishReason maps every Anthropic stop reason to one of the OpenAI
// values. tool_use means tool_calls only when the client gets tool calls:
// the JSON-mode tool answers with content.
func finishReason(stop string, toolCalls bool) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return openaiapi.FinishLength
	case "tool_use":
		if toolCalls {
			return openaiapi.FinishToolCalls
		}
	case "refusal":
		return openaiapi.FinishContentFilter
	}
	// end_turn, stop_sequence, pause_turn, and reasons not known yet.
	return openaiapi.FinishStop
}

// compactObject returns a tool input as a compact JSON string; a missing
// input is an empty object, so clients can always parse the arguments.
func compactObject(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil || buf.String() == "null" {
		return "{}"
	}
	return buf.String()
}
