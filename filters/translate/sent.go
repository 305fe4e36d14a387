package translate

import (
	"bytes"
	"cmp"
	"time"

	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/filters"
)

// sentEvent is what one event of the stream the client gets counts
// towards what it was sent, whichever API it speaks: the generated text,
// and whether it is an error event and of which type.
type sentEvent struct {
	// chat is a chat chunk's generated text: its choices' content,
	// refusals and tool calls' names and arguments.
	chat []byte
	// typ and delta are a Messages or Responses event's type and its
	// delta's text: a Messages content block's text and partial JSON, a
	// Responses text or arguments delta.
	typ   string
	delta []byte
	// errored marks an error event; errorType is its error's type.
	errored   bool
	errorType string
}

// read takes in one event's JSON, reading its strings in one pass without
// decoding the rest; false when it is not JSON.
func (ev *sentEvent) read(data []byte) bool {
	*ev = sentEvent{chat: ev.chat[:0], delta: ev.delta[:0]}
	_, err := jsonform.EditStrings(data, func(path []string, v string) (string, bool) {
		switch path[0] {
		case "type":
			if len(path) == 1 {
				ev.typ = v
			}
		case "choices":
			if chatText(path) {
				ev.chat = append(ev.chat, v...)
			}
		case "delta":
			if len(path) == 1 || (len(path) == 2 && (path[1] == "text" || path[1] == "partial_json")) {
				ev.delta = append(ev.delta, v...)
			}
		case "error":
			ev.errored = true
			if len(path) == 2 && path[1] == "type" {
				ev.errorType = v
			}
		}
		return v, false
	})
	if err != nil {
		return false
	}
	if !ev.errored && bytes.Contains(data, []byte(`"error"`)) {
		// An error without a string in it.
		v, found, _ := jsonform.Member(data, "error")
		ev.errored = found && string(v) != "null"
	}
	return true
}

// chatText reports whether a chat chunk's string at path is generated
// text: choices.N.delta.content or .refusal, or a tool call's
// choices.N.delta.tool_calls.M.function.name or .arguments.
func chatText(path []string) bool {
	if len(path) < 4 || path[2] != "delta" {
		return false
	}
	switch len(path) {
	case 4:
		return path[3] == "content" || path[3] == "refusal"
	case 7:
		return path[3] == "tool_calls" && path[5] == "function" && (path[6] == "name" || path[6] == "arguments")
	}
	return false
}

// generated is the text the event adds to the answer.
func (ev *sentEvent) generated() []byte {
	switch ev.typ {
	case "content_block_delta", "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
		return append(ev.chat, ev.delta...)
	}
	return ev.chat
}

// record notes in s what one piece of translated stream tells about the
// answer: when its first generated content went out, the generated text,
// and an error event, whichever API's events the client gets. Translators
// emit whole events, so every "data:" line is a complete one.
func record(s *filters.Sent, out []byte, now func() time.Time) {
	var ev sentEvent
	for len(out) > 0 {
		line, rest, _ := bytes.Cut(out, []byte("\n"))
		out = rest
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || bytes.Equal(data, []byte("[DONE]")) || !ev.read(data) {
			continue
		}
		if ev.errored {
			s.ErrorType = cmp.Or(ev.errorType, "stream_error")
		}
		before := len(s.Text)
		s.Text = append(s.Text, ev.generated()...)
		if len(s.Text) > before && s.FirstToken.IsZero() {
			s.FirstToken = now()
		}
	}
}
