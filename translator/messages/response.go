package messages

import (
	"encoding/json"
	"net/http"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// Complete implements [translator.Translator.Complete]: the chat
// translator's answer, a completion or an error envelope, in Messages form.
func (tr *Translator) Complete(status int, h translator.Headers, body []byte) translator.Result {
	r := tr.chat.Complete(status, h, body)
	if r.Status >= http.StatusBadRequest {
		r.Body = anthropicapi.ErrorBody(translator.ReadError(r.Status, r.Body), "")
		return r
	}
	var c openaiapi.ChatCompletion
	if err := json.Unmarshal(r.Body, &c); err != nil || len(c.Choices) == 0 {
		e := translator.GarbageError(tr.t.Provider.Name, "the answer has no choice")
		return translator.Result{Status: e.Status, Body: anthropicapi.ErrorBody(e, "")}
	}
	ch := c.Choices[0]
	msg := anthropicapi.Response{ID: tr.id, Type: "message", Role: "assistant", Model: tr.t.ClientModel, Content: []anthropicapi.Block{}}
	if s := ch.Message.Content; s != nil && *s != "" {
		msg.Content = append(msg.Content, anthropicapi.Block{Type: "text", Text: *s})
	} else if s := ch.Message.Refusal; s != nil && *s != "" {
		msg.Content = append(msg.Content, anthropicapi.Block{Type: "text", Text: *s})
	}
	for _, tc := range ch.Message.ToolCalls {
		msg.Content = append(msg.Content, anthropicapi.Block{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input(tc.Function.Arguments)})
	}
	stop := stopReason(ch.FinishReason)
	msg.StopReason = &stop
	if c.Usage != nil {
		msg.Usage = usage(*c.Usage)
	}
	r.Body, _ = json.Marshal(msg)
	return r
}

// input is a tool call's arguments as the object a tool_use block holds;
// arguments that are not a JSON object (a model's slip) become {}.
func input(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}
