package responses

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/apischema/responsesapi"
	"github.com/switchyard/switchyard/translator"
)

// Complete implements [translator.Translator.Complete]: the chat
// translator's answer, a completion or an error envelope, as a response
// object. Errors keep OpenAI's envelope, which the Responses API shares.
func (tr *Translator) Complete(status int, h translator.Headers, body []byte) translator.Result {
	r := tr.chat.Complete(status, h, body)
	if r.Status >= http.StatusBadRequest {
		return r
	}
	var c openaiapi.ChatCompletion
	if err := json.Unmarshal(r.Body, &c); err != nil || len(c.Choices) == 0 {
		return translator.ErrorResult(translator.GarbageError(tr.t.Provider.Name, "the answer has no choice"))
	}
	ch := c.Choices[0]
	var output []any
	var content []any
	if s := ch.Message.Content; s != nil && *s != "" {
		content = append(content, responsesapi.OutputText{Type: "output_text", Text: *s, Annotations: []any{}})
	}
	if s := ch.Message.Refusal; s != nil && *s != "" {
		content = append(content, responsesapi.Refusal{Type: "refusal", Refusal: *s})
	}
	if content != nil {
		output = append(output, responsesapi.Message{Type: "message", ID: "msg_" + tr.suffix, Status: responsesapi.StatusCompleted, Role: "assistant", Content: content})
	}
	for i, tc := range ch.Message.ToolCalls {
		ns, name := tr.names.client(tc.Function.Name)
		output = append(output, responsesapi.FunctionCall{Type: "function_call", ID: tr.callItemID(i), CallID: tc.ID,
			Name: name, Namespace: ns, Arguments: tc.Function.Arguments, Status: responsesapi.StatusCompleted})
	}
	resp := tr.response(responsesapi.StatusCompleted, output)
	finished(&resp, ch.FinishReason, c.Usage)
	r.Body, _ = json.Marshal(resp)
	return r
}

// callItemID is the id of the answer's i-th function call item.
func (tr *Translator) callItemID(i int) string {
	return "fc_" + tr.suffix + "_" + strconv.Itoa(i)
}
