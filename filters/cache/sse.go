package cache

import (
	"encoding/json"
)

// completion is what sse reads of a cached chat completion.
type completion struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string            `json:"role"`
			Content   *string           `json:"content"`
			Refusal   *string           `json:"refusal,omitempty"`
			ToolCalls []json.RawMessage `json:"tool_calls,omitempty"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage,omitempty"`
}

type chunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role      string           `json:"role,omitempty"`
	Content   *string          `json:"content,omitempty"`
	Refusal   *string          `json:"refusal,omitempty"`
	ToolCalls []map[string]any `json:"tool_calls,omitempty"`
}

// sse renders a chat completion as the stream of chunks that would have
// made it: the whole message in one delta, then the finish reason, the
// usage when the client asked for it, and [DONE].
func sse(body []byte, usage bool) []byte {
	var c completion
	if err := json.Unmarshal(body, &c); err != nil {
		return []byte("data: [DONE]\n\n")
	}
	var out []byte
	emit := func(ch chunk) {
		ch.ID, ch.Object, ch.Created, ch.Model = c.ID, "chat.completion.chunk", c.Created, c.Model
		b, _ := json.Marshal(ch)
		out = append(out, "data: "...)
		out = append(out, b...)
		out = append(out, "\n\n"...)
	}
	for _, ch := range c.Choices {
		d := delta{Role: "assistant", Content: ch.Message.Content, Refusal: ch.Message.Refusal}
		for i, raw := range ch.Message.ToolCalls {
			var tc map[string]any
			if json.Unmarshal(raw, &tc) == nil {
				tc["index"] = i
				d.ToolCalls = append(d.ToolCalls, tc)
			}
		}
		emit(chunk{Choices: []chunkChoice{{Index: ch.Index, Delta: d}}})
		reason := ch.FinishReason
		emit(chunk{Choices: []chunkChoice{{Index: ch.Index, Delta: delta{}, FinishReason: &reason}}})
	}
	if usage && len(c.Usage) > 0 {
		emit(chunk{Choices: []chunkChoice{}, Usage: c.Usage})
	}
	return append(out, "data: [DONE]\n\n"...)
}
