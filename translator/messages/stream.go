package messages

import (
	"bytes"
	"encoding/json"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// Event bodies, declared so their fields come out in Anthropic's order.
type (
	messageStart struct {
		Type    string                `json:"type"`
		Message anthropicapi.Response `json:"message"`
	}
	blockStart struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock any    `json:"content_block"`
	}
	blockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta any    `json:"delta"`
	}
	blockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	textBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	toolBlock struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	textDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	jsonDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	messageDelta struct {
		Type  string             `json:"type"`
		Delta stopDelta          `json:"delta"`
		Usage anthropicapi.Usage `json:"usage"`
	}
	stopDelta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
)

var (
	pingEvent        = anthropicapi.AppendEvent(nil, "ping", []byte(`{"type":"ping"}`))
	messageStopEvent = anthropicapi.AppendEvent(nil, "message_stop", []byte(`{"type":"message_stop"}`))
)

// StreamChunk implements [translator.Translator.StreamChunk]: the chat
// translator's events, rewritten as message_start, content blocks (start,
// deltas, stop), message_delta and message_stop, with a ping after the
// first block starts, as Anthropic sends them.
func (tr *Translator) StreamChunk(b []byte, eos bool) []byte {
	tr.r.Feed(tr.chat.StreamChunk(b, eos))
	var out []byte
	for {
		ev, ok := tr.r.Next()
		if !ok {
			break
		}
		out = tr.event(out, ev.Data)
	}
	if eos && !tr.done && !tr.failed {
		// The chat translator ends every stream with [DONE] or an error
		// event; anything else is a broken promise, reported as one.
		tr.failed = true
		out = append(out, anthropicapi.ErrorEvent(translator.GarbageError(tr.t.Provider.Name, "the stream ended before it was complete"))...)
	}
	return out
}

func (tr *Translator) event(out, data []byte) []byte {
	if tr.done || tr.failed {
		return out
	}
	if bytes.Equal(data, []byte("[DONE]")) {
		return tr.finish(out)
	}
	var ev translator.ChatEvent
	if json.Unmarshal(data, &ev) != nil {
		return out
	}
	if e := ev.Err(); e != nil {
		tr.failed = true
		return append(out, anthropicapi.ErrorEvent(e)...)
	}
	out = tr.start(out)
	for _, c := range ev.Choices {
		d := &c.Delta
		if d.Content != nil && *d.Content != "" {
			out = tr.appendText(out, *d.Content)
		}
		if d.Refusal != nil && *d.Refusal != "" {
			out = tr.appendText(out, *d.Refusal)
		}
		for _, tc := range d.ToolCalls {
			out = tr.appendTool(out, tc)
		}
		if c.FinishReason != nil {
			tr.reason = *c.FinishReason
		}
	}
	return out
}

func (tr *Translator) start(out []byte) []byte {
	if tr.started {
		return out
	}
	tr.started = true
	msg := anthropicapi.Response{ID: tr.id, Type: "message", Role: "assistant", Model: tr.t.ClientModel, Content: []anthropicapi.Block{}}
	return appendJSON(out, "message_start", messageStart{Type: "message_start", Message: msg})
}

func (tr *Translator) appendText(out []byte, s string) []byte {
	if tr.text < 0 {
		out = tr.startBlock(out, textBlock{Type: "text"})
		tr.text = tr.open
	}
	return appendJSON(out, "content_block_delta", blockDelta{Type: "content_block_delta", Index: tr.text, Delta: textDelta{Type: "text_delta", Text: s}})
}

func (tr *Translator) appendTool(out []byte, tc openaiapi.ToolCall) []byte {
	i := 0
	if tc.Index != nil {
		i = *tc.Index
	}
	block, ok := tr.tools[i]
	if !ok {
		if tr.tools == nil {
			tr.tools = map[int]int{}
		}
		out = tr.startBlock(out, toolBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage("{}")})
		block = tr.open
		tr.tools[i] = block
	}
	if tc.Function.Arguments == "" {
		return out
	}
	return appendJSON(out, "content_block_delta", blockDelta{Type: "content_block_delta", Index: block, Delta: jsonDelta{Type: "input_json_delta", PartialJSON: tc.Function.Arguments}})
}

// startBlock closes the open block and starts the next one.
func (tr *Translator) startBlock(out []byte, block any) []byte {
	out = tr.closeBlock(out)
	tr.open = tr.blocks
	tr.blocks++
	out = appendJSON(out, "content_block_start", blockStart{Type: "content_block_start", Index: tr.open, ContentBlock: block})
	if !tr.pinged {
		tr.pinged = true
		out = append(out, pingEvent...)
	}
	return out
}

func (tr *Translator) closeBlock(out []byte) []byte {
	if tr.open < 0 {
		return out
	}
	out = appendJSON(out, "content_block_stop", blockStop{Type: "content_block_stop", Index: tr.open})
	if tr.open == tr.text {
		tr.text = -1
	}
	tr.open = -1
	return out
}

// finish closes the message: the last block, the stop reason with the
// usage, message_stop.
func (tr *Translator) finish(out []byte) []byte {
	tr.done = true
	out = tr.closeBlock(tr.start(out))
	u, _ := tr.chat.Usage()
	out = appendJSON(out, "message_delta", messageDelta{Type: "message_delta", Delta: stopDelta{StopReason: stopReason(tr.reason)}, Usage: usage(u)})
	return append(out, messageStopEvent...)
}

func appendJSON(out []byte, name string, v any) []byte {
	b, _ := json.Marshal(v)
	return anthropicapi.AppendEvent(out, name, b)
}
