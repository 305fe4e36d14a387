package gemini

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// Complete implements [translator.Translator.Complete].
func (tr *Translator) Complete(status int, h translator.Headers, body []byte) translator.Result {
	if status < 200 || status > 299 {
		return translator.ErrorResult(tr.errorFor(status, h, body))
	}
	var resp generateResponse
	if !isObject(body) || json.Unmarshal(body, &resp) != nil {
		return translator.ErrorResult(translator.GarbageError(tr.providerName(), "the body is not a generateContent response"))
	}
	if resp.Error != nil {
		return translator.ErrorResult(tr.mapError(errorStatus(resp.Error), resp.Error, h.Get("retry-after")))
	}
	var msg openaiapi.ResponseMessage
	var finish string
	switch {
	case len(resp.Candidates) > 0:
		c := &resp.Candidates[0]
		text, calls := tr.read(c)
		msg = openaiapi.ResponseMessage{Role: "assistant", Content: &text, ToolCalls: calls}
		if text == "" && len(calls) > 0 {
			msg.Content = nil
		}
		finish = finishReason(c.FinishReason, len(calls) > 0)
	case resp.PromptFeedback != nil && resp.PromptFeedback.BlockReason != "":
		// The prompt itself was blocked: no candidates at all.
		empty := ""
		msg = openaiapi.ResponseMessage{Role: "assistant", Content: &empty}
		finish = openaiapi.FinishContentFilter
	default:
		return translator.ErrorResult(translator.GarbageError(tr.providerName(), "the body has no candidates"))
	}
	if resp.UsageMetadata != nil {
		tr.setUsage(resp.UsageMetadata)
	}
	cc := openaiapi.ChatCompletion{
		ID:      tr.t.ID,
		Object:  "chat.completion",
		Created: tr.t.Created,
		Model:   tr.t.ClientModel,
		Choices: []openaiapi.Choice{{Index: 0, Message: msg, FinishReason: finish}},
	}
	if tr.hasUsage {
		u := tr.usage
		cc.Usage = &u
	}
	out, err := json.Marshal(cc)
	if err != nil {
		return translator.ErrorResult(translator.GarbageError(tr.providerName(), "the answer cannot be re-encoded"))
	}
	return translator.Result{Status: http.StatusOK, Body: out}
}

// isObject reports whether b holds a JSON object (json.Unmarshal would
// also accept null for a struct).
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// read returns a candidate's answer text (thought parts are the model's
// reasoning, not its answer, and are dropped) and its function calls as
// OpenAI tool calls with minted ids, numbered across the whole answer.
func (tr *Translator) read(c *candidate) (string, []openaiapi.ToolCall) {
	if c.Content == nil {
		return "", nil
	}
	var text []byte
	var calls []openaiapi.ToolCall
	for _, p := range c.Content.Parts {
		switch {
		case p.FunctionCall != nil:
			if tr.oneCall && tr.calls > 0 {
				continue
			}
			id := tr.callID(tr.calls)
			if p.ThoughtSignature != "" {
				id += thoughtSeparator + signatureForID(p.ThoughtSignature)
			}
			calls = append(calls, openaiapi.ToolCall{
				ID:       id,
				Type:     "function",
				Function: openaiapi.FunctionCall{Name: p.FunctionCall.Name, Arguments: arguments(p.FunctionCall.Args)},
			})
			tr.calls++
		case p.Thought:
		default:
			text = append(text, p.Text...)
		}
	}
	return string(text), calls
}

// arguments is OpenAI's JSON string for Gemini's args object.
func arguments(args json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil || buf.String() == "null" {
		return "{}"
	}
	return buf.String()
}

// finishReason maps Gemini's finishReason to the five values OpenAI
// clients know. Function calls finish with STOP at Gemini.
func finishReason(reason string, hasCalls bool) string {
	switch reason {
	case "MAX_TOKENS":
		return openaiapi.FinishLength
	case "SAFETY", "RECITATION", "LANGUAGE", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "IMAGE_OTHER", "NO_IMAGE":
		return openaiapi.FinishContentFilter
	}
	// STOP, FINISH_REASON_UNSPECIFIED, the function-call failures
	// (MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS,
	// MISSING_THOUGHT_SIGNATURE, MALFORMED_RESPONSE) and reasons added later.
	if hasCalls {
		return openaiapi.FinishToolCalls
	}
	return openaiapi.FinishStop
}

// setUsage records Gemini's usage, which is a running total when streamed:
// the last report replaces the earlier ones.
func (tr *Translator) setUsage(u *usageMetadata) {
	prompt := u.PromptTokenCount + u.ToolUsePromptTokenCount
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	tr.usage = openaiapi.Usage{
		PromptTokens:            prompt,
		CompletionTokens:        completion,
		TotalTokens:             prompt + completion,
		PromptTokensDetails:     &openaiapi.PromptTokensDetails{CachedTokens: u.CachedContentTokenCount},
		CompletionTokensDetails: &openaiapi.CompletionTokensDetails{ReasoningTokens: u.ThoughtsTokenCount},
	}
	tr.hasUsage = true
}
