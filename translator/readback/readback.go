// Package readback reads back what a client was sent on a translated
// stream: the text its events add to the answer, and whether one of them
// was an error event, whichever API the client speaks (chat chunks,
// Messages or Responses events). The gateway times a stream's first token
// and estimates the usage of one cut short from it.
//
// A translator that already knows what it emitted says so instead
// ([translator.Reporter]); readback is the reading every other translator's
// output gets, and the yardstick a Reporter is tested against.
package readback

import (
	"bytes"

	"github.com/switchyard/switchyard/apischema/jsonform"
)

// StreamError is the error type of an error event whose error names none.
const StreamError = "stream_error"

// Chunk reads one piece of a translated stream, whole events as
// translators emit them, and appends to text what its events add to the
// answer. errorType is the type of the last error event among them
// (StreamError when it names none), "" when there was none. Lines other
// than data lines, [DONE] and data that is not JSON are skipped.
func Chunk(text, out []byte) (_ []byte, errorType string) {
	var ev event
	for len(out) > 0 {
		line, rest, _ := bytes.Cut(out, []byte("\n"))
		out = rest
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || bytes.Equal(data, []byte("[DONE]")) || !ev.read(data) {
			continue
		}
		if ev.errored {
			errorType = StreamError
			if ev.errorType != "" {
				errorType = ev.errorType
			}
		}
		text = append(text, ev.generated()...)
	}
	return text, errorType
}

// event is what one event counts towards the answer.
type event struct {
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
func (ev *event) read(data []byte) bool {
	*ev = event{chat: ev.chat[:0], delta: ev.delta[:0]}
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
func (ev *event) generated() []byte {
	switch ev.typ {
	case "content_block_delta", "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
		return append(ev.chat, ev.delta...)
	}
	return ev.chat
}
