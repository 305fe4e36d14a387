package translate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"time"

	"github.com/switchyard/switchyard/filters"
)

// sentEvent is the part of an OpenAI stream event that counts towards what
// the client was sent: generated text, and an error that ended the stream.
type sentEvent struct {
	Choices []struct {
		Delta struct {
			Content   string `json:"content"`
			Refusal   string `json:"refusal"`
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Error *struct {
		Type string `json:"type"`
	} `json:"error"`

	// An Anthropic Messages or OpenAI Responses event: the type, and its
	// delta, an object (a Messages content block's) or a string (a
	// Responses text or arguments delta).
	Type  string          `json:"type"`
	Delta json.RawMessage `json:"delta"`
}

// blockDelta is a Messages content block's delta.
type blockDelta struct {
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
}

// generated is the text an event of the Messages or Responses API adds to
// the answer.
func (ev *sentEvent) generated() string {
	switch ev.Type {
	case "content_block_delta":
		var d blockDelta
		if json.Unmarshal(ev.Delta, &d) == nil {
			return d.Text + d.PartialJSON
		}
	case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
		var d string
		if json.Unmarshal(ev.Delta, &d) == nil {
			return d
		}
	}
	return ""
}

// record notes in s what one piece of translated stream tells about the
// answer: when its first generated content went out, the generated text,
// and an error event, whichever API's events the client gets. Translators
// emit whole events, so every "data:" line is a complete one.
func record(s *filters.Sent, out []byte, now func() time.Time) {
	for len(out) > 0 {
		line, rest, _ := bytes.Cut(out, []byte("\n"))
		out = rest
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || bytes.Equal(data, []byte("[DONE]")) {
			continue
		}
		var ev sentEvent
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		if ev.Error != nil {
			s.ErrorType = cmp.Or(ev.Error.Type, "stream_error")
		}
		before := len(s.Text)
		s.Text = append(s.Text, ev.generated()...)
		for _, c := range ev.Choices {
			s.Text = append(s.Text, c.Delta.Content...)
			s.Text = append(s.Text, c.Delta.Refusal...)
			for _, tc := range c.Delta.ToolCalls {
				s.Text = append(s.Text, tc.Function.Name...)
				s.Text = append(s.Text, tc.Function.Arguments...)
			}
		}
		if len(s.Text) > before && s.FirstToken.IsZero() {
			s.FirstToken = now()
		}
	}
}
