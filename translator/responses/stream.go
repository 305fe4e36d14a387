package responses

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/apischema/responsesapi"
	"github.com/switchyard/switchyard/translator"
)

// item is one output item of a streamed answer: a message, whose parts
// are text or refusals, or a function call.
type item struct {
	index  int
	id     string
	call   bool
	closed bool
	status string // the status it closed with
	parts  []*textPart
	// A call's: namespace and name as the client knows them.
	callID, namespace, name string
	args                    strings.Builder
}

type textPart struct {
	refusal bool
	text    strings.Builder
}

func (it *item) callItem(status string) responsesapi.FunctionCall {
	return responsesapi.FunctionCall{Type: "function_call", ID: it.id, CallID: it.callID, Name: it.name, Namespace: it.namespace, Arguments: it.args.String(), Status: status}
}

// value is the item as a response's output holds it; an item closed
// earlier keeps the status it closed with.
func (it *item) value(status string) any {
	if it.closed {
		status = it.status
	}
	if it.call {
		return it.callItem(status)
	}
	content := make([]any, len(it.parts))
	for j, p := range it.parts {
		content[j] = p.value()
	}
	return responsesapi.Message{Type: "message", ID: it.id, Status: status, Role: "assistant", Content: content}
}

func (p *textPart) value() any {
	if p.refusal {
		return responsesapi.Refusal{Type: "refusal", Refusal: p.text.String()}
	}
	return responsesapi.OutputText{Type: "output_text", Text: p.text.String(), Annotations: []any{}}
}

// StreamChunk implements [translator.Translator.StreamChunk]: the chat
// translator's events, rewritten as the Responses events — created and
// in_progress; for each output item its added event, its content parts'
// added, delta and done events (a call's argument deltas and done), its
// done event; then completed (or incomplete, when the model was cut off),
// every event numbered in sequence. The message closes when the first
// call starts, as OpenAI streams them; calls stay open until the answer
// ends, since a chat stream may interleave parallel calls.
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
		out = append(out, tr.ErrorEvent(translator.GarbageError(tr.t.Provider.Name, "the stream ended before it was complete"))...)
	}
	return out
}

// ErrorEvent implements [translator.ErrorEventer]: the error event that
// ends the stream, numbered next. Nothing follows it.
func (tr *Translator) ErrorEvent(e *openaiapi.Error) []byte {
	if tr.done || tr.failed {
		return nil
	}
	tr.failed = true
	tr.seq++
	return responsesapi.ErrorEvent(e, tr.seq-1)
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
		return append(out, tr.ErrorEvent(e)...)
	}
	out = tr.start(out)
	for _, c := range ev.Choices {
		d := &c.Delta
		if d.Content != nil && *d.Content != "" {
			out = tr.appendText(out, *d.Content, false)
		}
		if d.Refusal != nil && *d.Refusal != "" {
			out = tr.appendText(out, *d.Refusal, true)
		}
		for _, tc := range d.ToolCalls {
			out = tr.appendCall(out, tc)
		}
		if c.FinishReason != nil {
			tr.reason = *c.FinishReason
		}
	}
	return out
}

// emit appends one event.
func emit(out []byte, typ string, v any) []byte {
	b, _ := json.Marshal(v)
	return responsesapi.AppendEvent(out, typ, b)
}

// next is the next event's sequence number.
func (tr *Translator) next() int {
	tr.seq++
	return tr.seq - 1
}

func (tr *Translator) start(out []byte) []byte {
	if tr.started {
		return out
	}
	tr.started = true
	resp := tr.response(responsesapi.StatusInProgress, nil)
	out = emit(out, responsesapi.EventCreated, responsesapi.ResponseEvent{Type: responsesapi.EventCreated, SequenceNumber: tr.next(), Response: resp})
	return emit(out, responsesapi.EventInProgress, responsesapi.ResponseEvent{Type: responsesapi.EventInProgress, SequenceNumber: tr.next(), Response: resp})
}

// appendText appends text (or refusal) to the answer's message item,
// opening the item, or a new part when the kind changes.
func (tr *Translator) appendText(out []byte, s string, refusal bool) []byte {
	m := tr.text
	if m == nil {
		m = &item{index: len(tr.items), id: "msg_" + tr.suffix}
		tr.items = append(tr.items, m)
		tr.text = m
		out = emit(out, responsesapi.EventOutputItemAdded, responsesapi.ItemEvent{Type: responsesapi.EventOutputItemAdded, SequenceNumber: tr.next(), OutputIndex: m.index,
			Item: responsesapi.Message{Type: "message", ID: m.id, Status: responsesapi.StatusInProgress, Role: "assistant", Content: []any{}}})
	}
	if n := len(m.parts); n == 0 || m.parts[n-1].refusal != refusal {
		out = tr.closePart(out, m)
		p := &textPart{refusal: refusal}
		m.parts = append(m.parts, p)
		out = emit(out, responsesapi.EventContentPartAdded, responsesapi.PartEvent{Type: responsesapi.EventContentPartAdded, SequenceNumber: tr.next(),
			ItemID: m.id, OutputIndex: m.index, ContentIndex: len(m.parts) - 1, Part: p.value()})
	}
	ci := len(m.parts) - 1
	m.parts[ci].text.WriteString(s)
	ev := responsesapi.TextDeltaEvent{Type: responsesapi.EventOutputTextDelta, SequenceNumber: tr.next(), ItemID: m.id, OutputIndex: m.index, ContentIndex: ci, Delta: s, Logprobs: &[]any{}}
	if refusal {
		ev.Type, ev.Logprobs = responsesapi.EventRefusalDelta, nil
	}
	return emit(out, ev.Type, ev)
}

// closePart ends a message's last part, if it has one.
func (tr *Translator) closePart(out []byte, m *item) []byte {
	n := len(m.parts)
	if n == 0 {
		return out
	}
	p := m.parts[n-1]
	if p.refusal {
		out = emit(out, responsesapi.EventRefusalDone, responsesapi.RefusalDoneEvent{Type: responsesapi.EventRefusalDone, SequenceNumber: tr.next(),
			ItemID: m.id, OutputIndex: m.index, ContentIndex: n - 1, Refusal: p.text.String()})
	} else {
		out = emit(out, responsesapi.EventOutputTextDone, responsesapi.TextDoneEvent{Type: responsesapi.EventOutputTextDone, SequenceNumber: tr.next(),
			ItemID: m.id, OutputIndex: m.index, ContentIndex: n - 1, Text: p.text.String(), Logprobs: []any{}})
	}
	return emit(out, responsesapi.EventContentPartDone, responsesapi.PartEvent{Type: responsesapi.EventContentPartDone, SequenceNumber: tr.next(),
		ItemID: m.id, OutputIndex: m.index, ContentIndex: n - 1, Part: p.value()})
}

// appendCall appends a tool call fragment to its function call item,
// opening the item on the call's first fragment.
func (tr *Translator) appendCall(out []byte, tc openaiapi.ToolCall) []byte {
	i := 0
	if tc.Index != nil {
		i = *tc.Index
	}
	c, ok := tr.tools[i]
	if !ok {
		if tr.tools == nil {
			tr.tools = map[int]*item{}
		}
		if tr.text != nil {
			// Text after the calls opens a message of its own.
			out = tr.closeItem(out, tr.text, responsesapi.StatusCompleted)
			tr.text = nil
		}
		c = &item{index: len(tr.items), id: tr.callItemID(len(tr.tools)), call: true, callID: tc.ID}
		c.namespace, c.name = tr.names.client(tc.Function.Name)
		tr.items = append(tr.items, c)
		tr.tools[i] = c
		out = emit(out, responsesapi.EventOutputItemAdded, responsesapi.ItemEvent{Type: responsesapi.EventOutputItemAdded, SequenceNumber: tr.next(), OutputIndex: c.index,
			Item: c.callItem(responsesapi.StatusInProgress)})
	}
	if tc.Function.Arguments == "" {
		return out
	}
	c.args.WriteString(tc.Function.Arguments)
	return emit(out, responsesapi.EventFunctionArgsDelta, responsesapi.ArgsDeltaEvent{Type: responsesapi.EventFunctionArgsDelta, SequenceNumber: tr.next(),
		ItemID: c.id, OutputIndex: c.index, Delta: tc.Function.Arguments})
}

// finish closes every open item in output order, then the response with
// its output and usage.
func (tr *Translator) finish(out []byte) []byte {
	tr.done = true
	out = tr.start(out)
	resp := tr.response(responsesapi.StatusCompleted, nil)
	u, ok := tr.chat.Usage()
	var up *openaiapi.Usage
	if ok {
		up = &u
	}
	finished(&resp, tr.reason, up)
	for _, it := range tr.items {
		if !it.closed {
			out = tr.closeItem(out, it, resp.Status)
		}
		resp.Output = append(resp.Output, it.value(resp.Status))
	}
	typ := responsesapi.EventCompleted
	if resp.Status == responsesapi.StatusIncomplete {
		typ = responsesapi.EventIncomplete
	}
	return emit(out, typ, responsesapi.ResponseEvent{Type: typ, SequenceNumber: tr.next(), Response: resp})
}

// closeItem ends an item: a call's arguments or a message's last part,
// then the item itself, with status.
func (tr *Translator) closeItem(out []byte, it *item, status string) []byte {
	it.closed, it.status = true, status
	if it.call {
		out = emit(out, responsesapi.EventFunctionArgsDone, responsesapi.ArgsDoneEvent{Type: responsesapi.EventFunctionArgsDone, SequenceNumber: tr.next(),
			ItemID: it.id, OutputIndex: it.index, Name: it.name, Arguments: it.args.String()})
	} else {
		out = tr.closePart(out, it)
	}
	return emit(out, responsesapi.EventOutputItemDone, responsesapi.ItemEvent{Type: responsesapi.EventOutputItemDone, SequenceNumber: tr.next(), OutputIndex: it.index, Item: it.value(status)})
}
