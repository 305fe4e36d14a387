package cache

import (
	"bytes"
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

// streamChunk is what collect reads of a chunk of a streamed answer.
type streamChunk struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// toolCall is one tool call of a collected message.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// collect is the chat completion a stream of chunks spells out, the
// inverse of sse: each choice's deltas joined (text, refusal, tool calls
// by index, their arguments concatenated), its finish reason, and the
// stream's usage, else usage (a client that did not ask for the usage
// chunk). False for a stream that is not whole: no [DONE], an error
// event, a choice without a finish reason, or a chunk that is not JSON.
func collect(stream []byte, usage json.RawMessage) ([]byte, bool) {
	type choice struct {
		content, refusal *string
		calls            []*toolCall
		finish           *string
	}
	var (
		head    streamChunk
		choices []*choice
		done    bool
	)
	for _, line := range bytes.Split(stream, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			done = true
			continue
		}
		var ch streamChunk
		if json.Unmarshal(data, &ch) != nil || len(ch.Error) > 0 {
			return nil, false
		}
		if head.ID == "" {
			head.ID, head.Created, head.Model = ch.ID, ch.Created, ch.Model
		}
		if len(ch.Usage) > 0 && string(ch.Usage) != "null" {
			usage = ch.Usage
		}
		for _, c := range ch.Choices {
			if c.Index < 0 || c.Index > 16 {
				return nil, false
			}
			for len(choices) <= c.Index {
				choices = append(choices, &choice{})
			}
			cc := choices[c.Index]
			cc.content = appendText(cc.content, c.Delta.Content)
			cc.refusal = appendText(cc.refusal, c.Delta.Refusal)
			for _, tc := range c.Delta.ToolCalls {
				if tc.Index < 0 || tc.Index > 128 {
					return nil, false
				}
				for len(cc.calls) <= tc.Index {
					cc.calls = append(cc.calls, &toolCall{Type: "function"})
				}
				t := cc.calls[tc.Index]
				if tc.ID != "" {
					t.ID = tc.ID
				}
				if tc.Type != "" {
					t.Type = tc.Type
				}
				t.Function.Name += tc.Function.Name
				t.Function.Arguments += tc.Function.Arguments
			}
			if c.FinishReason != nil {
				cc.finish = c.FinishReason
			}
		}
	}
	if !done || len(choices) == 0 {
		return nil, false
	}
	type message struct {
		Role      string      `json:"role"`
		Content   *string     `json:"content"`
		Refusal   *string     `json:"refusal,omitempty"`
		ToolCalls []*toolCall `json:"tool_calls,omitempty"`
	}
	type outChoice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	out := struct {
		ID      string          `json:"id"`
		Object  string          `json:"object"`
		Created int64           `json:"created"`
		Model   string          `json:"model"`
		Choices []outChoice     `json:"choices"`
		Usage   json.RawMessage `json:"usage,omitempty"`
	}{ID: head.ID, Object: "chat.completion", Created: head.Created, Model: head.Model, Usage: usage}
	for i, c := range choices {
		if c.finish == nil {
			return nil, false
		}
		out.Choices = append(out.Choices, outChoice{Index: i, FinishReason: *c.finish,
			Message: message{Role: "assistant", Content: c.content, Refusal: c.refusal, ToolCalls: c.calls}})
	}
	b, err := json.Marshal(out)
	return b, err == nil
}

// appendText is text with more after it; nil while neither was sent.
func appendText(text, more *string) *string {
	if more == nil {
		return text
	}
	if text == nil {
		return more
	}
	joined := *text + *more
	return &joined
}
