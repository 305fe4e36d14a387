package gemini

import (
	"encoding/json"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
)

// StreamChunk implements [translator.Translator.StreamChunk].
//
// Gemini sends no end marker: the stream is over when the body ends. The
// finish chunk is therefore written at eos, which is also when it is known
// whether the answer held function calls (STOP then means tool_calls).
func (tr *Translator) StreamChunk(b []byte, eos bool) []byte {
	tr.r.Feed(b)
	var out []byte
	for {
		ev, ok := tr.r.Next()
		if !ok {
			break
		}
		out = tr.event(out, ev.Data)
	}
	if !eos {
		return out
	}
	if ev, ok := tr.r.Flush(); ok {
		out = tr.event(out, ev.Data)
	}
	return tr.close(out)
}

// event translates one streamed GenerateContentResponse.
func (tr *Translator) event(out, data []byte) []byte {
	if tr.done || tr.failed {
		return out
	}
	var resp generateResponse
	if !isObject(data) || json.Unmarshal(data, &resp) != nil {
		tr.failed = true
		return append(out, translator.GarbageError(tr.providerName(), "a stream event is not a generateContent response").StreamEvent()...)
	}
	if resp.Error != nil {
		tr.failed = true
		return append(out, tr.mapError(errorStatus(resp.Error), resp.Error, "").StreamEvent()...)
	}
	if resp.UsageMetadata != nil {
		tr.setUsage(resp.UsageMetadata)
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		tr.blocked = true
	}
	if !tr.started {
		tr.started = true
		empty := ""
		out = tr.appendChunk(out, openaiapi.Delta{Role: "assistant", Content: &empty}, nil)
	}
	if len(resp.Candidates) == 0 {
		return out
	}
	c := &resp.Candidates[0]
	first := tr.calls
	text, calls := tr.read(c)
	if text != "" {
		out = tr.appendChunk(out, openaiapi.Delta{Content: &text}, nil)
	}
	// Gemini sends a function call whole, so each becomes one complete
	// tool-call delta.
	for i := range calls {
		index := first + i
		calls[i].Index = &index
		out = tr.appendChunk(out, openaiapi.Delta{ToolCalls: calls[i : i+1]}, nil)
	}
	if c.FinishReason != "" {
		tr.finish = c.FinishReason
	}
	return out
}

// close ends the client's stream at the provider's eos: finish chunk,
// usage chunk if asked for, [DONE] — or an error event if no chunk said the
// answer was finished, since the body then ended early.
func (tr *Translator) close(out []byte) []byte {
	if tr.done || tr.failed {
		return out
	}
	if tr.finish == "" && !tr.blocked {
		tr.failed = true
		return append(out, translator.GarbageError(tr.providerName(), "the stream ended before it was complete").StreamEvent()...)
	}
	tr.done = true
	finish := finishReason(tr.finish, tr.calls > 0)
	if tr.blocked {
		finish = openaiapi.FinishContentFilter
	}
	out = tr.appendChunk(out, openaiapi.Delta{}, &finish)
	if tr.includeUsage {
		u := tr.usage
		out = tr.appendJSON(out, openaiapi.ChatCompletionChunk{
			ID: tr.t.ID, Object: "chat.completion.chunk", Created: tr.t.Created, Model: tr.t.ClientModel,
			Choices: []openaiapi.ChunkChoice{}, Usage: &u,
		})
	}
	return append(out, sse.Done...)
}

// appendChunk appends one chunk of the single choice.
func (tr *Translator) appendChunk(out []byte, d openaiapi.Delta, finish *string) []byte {
	return tr.appendJSON(out, openaiapi.ChatCompletionChunk{
		ID: tr.t.ID, Object: "chat.completion.chunk", Created: tr.t.Created, Model: tr.t.ClientModel,
		Choices: []openaiapi.ChunkChoice{{Index: 0, Delta: d, FinishReason: finish}},
	})
}

func (tr *Translator) appendJSON(out []byte, c openaiapi.ChatCompletionChunk) []byte {
	b, err := json.Marshal(c)
	if err != nil {
		return out // the chunk holds only strings and numbers the gateway made
	}
	return sse.AppendData(out, b)
}
