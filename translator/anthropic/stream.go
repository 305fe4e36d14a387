package anthropic

import (
	"encoding/json"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
)

// blockState is what the stream remembers about an open tool_use block.
type blockState struct {
	tool    int  // the OpenAI tool-call index
	json    bool // the JSON-mode tool: its input is the content
	gotArgs bool // some input bytes went out
}

// chunk is an OpenAI chat.completion.chunk. It is declared here rather
// than taken from the wire package because a client that asked for usage
// must see "usage": null on every chunk but the last, which the wire
// type's omitempty cannot write.
type chunk struct {
	ID      string                  `json:"id"`
	Object  string                  `json:"object"`
	Created int64                   `json:"created"`
	Model   string                  `json:"model"`
	Choices []openaiapi.ChunkChoice `json:"choices"`
	Usage   json.RawMessage         `json:"usage,omitempty"`
}

var (
	nullJSON = json.RawMessage("null")
	ping     = []byte(": ping\n\n")
)

// StreamChunk implements [translator.Translator.StreamChunk].
func (tr *Translator) StreamChunk(b []byte, eos bool) []byte {
	tr.r.Feed(b)
	var out []byte
	for {
		ev, ok := tr.r.Next()
		if !ok {
			break
		}
		out = tr.event(out, ev)
	}
	if !eos {
		return out
	}
	// An event left without its blank line is translated if it is whole;
	// a torn one is what a cut stream leaves, reported as the cut below.
	if ev, ok := tr.r.Flush(); ok && json.Valid(ev.Data) {
		out = tr.event(out, ev)
	}
	if !tr.done && !tr.failed {
		tr.failed = true
		out = append(out, translator.GarbageError(tr.t.Provider.Name, "the stream ended before it was complete").StreamEvent()...)
	}
	return out
}

// event translates one Anthropic event. Events are named twice (the SSE
// event name and the "type" field); the type is read, the name is the
// fallback. Unknown events are ignored, as Anthropic asks.
func (tr *Translator) event(out []byte, ev sse.Event) []byte {
	if tr.done || tr.failed {
		return out
	}
	var e event
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		tr.failed = true
		return append(out, translator.GarbageError(tr.t.Provider.Name, "a stream event is not JSON").StreamEvent()...)
	}
	typ := e.Type
	if typ == "" {
		typ = ev.Name
	}
	switch typ {
	case "message_start":
		if e.Message != nil {
			tr.usage.set(e.Message.Usage)
		}
		return tr.start(out)
	case "content_block_start":
		return tr.blockStart(out, e.Index, e.ContentBlock)
	case "content_block_delta":
		return tr.blockDelta(out, e.Index, e.Delta)
	case "content_block_stop":
		return tr.blockStop(out, e.Index)
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			tr.stopReason = e.Delta.StopReason
		}
		tr.usage.set(e.Usage)
	case "message_stop":
		return tr.finish(out)
	case "ping":
		return append(out, ping...)
	case "error":
		tr.failed = true
		ae := e.Error
		if ae == nil {
			ae = &apiError{}
		}
		return append(out, tr.apiError(statusOf(ae.Type), ae).StreamEvent()...)
	}
	return out
}

func (tr *Translator) blockStart(out []byte, index int, b *block) []byte {
	if b == nil {
		return out
	}
	switch b.Type {
	case "text":
		if b.Text == "" || tr.jsonTool {
			return out
		}
		return tr.delta(out, openaiapi.Delta{Content: &b.Text})
	case "tool_use":
		// The input is normally {} here and arrives in deltas; a non-empty
		// one is sent as the first arguments.
		args := compactObject(b.Input)
		if args == "{}" {
			args = ""
		}
		if tr.blocks == nil {
			tr.blocks = map[int]*blockState{}
		}
		if tr.jsonTool && b.Name == jsonToolName {
			tr.blocks[index] = &blockState{json: true, gotArgs: args != ""}
			if args == "" {
				return out
			}
			return tr.delta(out, openaiapi.Delta{Content: &args})
		}
		bs := &blockState{tool: tr.nextTool, gotArgs: args != ""}
		tr.blocks[index] = bs
		tr.nextTool++
		return tr.delta(out, openaiapi.Delta{ToolCalls: []openaiapi.ToolCall{{
			Index: &bs.tool, ID: b.ID, Type: "function",
			Function: openaiapi.FunctionCall{Name: b.Name, Arguments: args},
		}}})
	}
	// thinking and redacted_thinking blocks (and their deltas) have no
	// OpenAI field: dropped.
	return out
}

func (tr *Translator) blockDelta(out []byte, index int, d *delta) []byte {
	if d == nil {
		return out
	}
	switch d.Type {
	case "text_delta":
		if d.Text == "" || tr.jsonTool {
			return out
		}
		return tr.delta(out, openaiapi.Delta{Content: &d.Text})
	case "input_json_delta":
		bs := tr.blocks[index]
		if bs == nil || d.PartialJSON == "" {
			return out
		}
		bs.gotArgs = true
		return tr.arguments(out, bs, d.PartialJSON)
	}
	return out
}

// blockStop gives a tool call that received no input "{}", so clients can
// always parse its arguments.
func (tr *Translator) blockStop(out []byte, index int) []byte {
	bs := tr.blocks[index]
	if bs == nil || bs.gotArgs {
		return out
	}
	bs.gotArgs = true
	return tr.arguments(out, bs, "{}")
}

func (tr *Translator) arguments(out []byte, bs *blockState, args string) []byte {
	if bs.json {
		return tr.delta(out, openaiapi.Delta{Content: &args})
	}
	return tr.delta(out, openaiapi.Delta{ToolCalls: []openaiapi.ToolCall{{Index: &bs.tool, Function: openaiapi.FunctionCall{Arguments: args}}}})
}

// finish ends the stream: the finish chunk, the usage chunk when the
// client asked for it, and [DONE].
func (tr *Translator) finish(out []byte) []byte {
	out = tr.start(out)
	reason := finishReason(tr.stopReason, tr.nextTool > 0)
	out = tr.write(out, tr.envelope(openaiapi.ChunkChoice{FinishReason: &reason}))
	if tr.includeUsage {
		u := tr.usage.openai()
		c := tr.envelope()
		c.Choices = []openaiapi.ChunkChoice{}
		c.Usage, _ = json.Marshal(u)
		out = tr.write(out, c)
	}
	tr.done = true
	return append(out, sse.Done...)
}

// start sends the role chunk once, before anything else.
func (tr *Translator) start(out []byte) []byte {
	if tr.started {
		return out
	}
	tr.started = true
	empty := ""
	return tr.write(out, tr.envelope(openaiapi.ChunkChoice{Delta: openaiapi.Delta{Role: "assistant", Content: &empty}}))
}

func (tr *Translator) delta(out []byte, d openaiapi.Delta) []byte {
	out = tr.start(out)
	return tr.write(out, tr.envelope(openaiapi.ChunkChoice{Delta: d}))
}

func (tr *Translator) envelope(choices ...openaiapi.ChunkChoice) chunk {
	c := chunk{ID: tr.t.ID, Object: "chat.completion.chunk", Created: tr.t.Created, Model: tr.t.ClientModel, Choices: choices}
	if tr.includeUsage {
		c.Usage = nullJSON
	}
	return c
}

func (tr *Translator) write(out []byte, c chunk) []byte {
	b, _ := json.Marshal(c) // plain strings and numbers: cannot fail
	return sse.AppendData(out, b)
}
