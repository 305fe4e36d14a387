package openai

import (
	"strconv"

	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
)

// StreamChunk implements [translator.Translator.StreamChunk].
//
// Every provider event becomes at most one client event, rewritten like a
// whole completion. Chunks without choices are dropped (Azure's
// prompt-filter chunk, a usage chunk the client did not ask for) unless
// they carry the usage the client asked for. Usage a provider puts on a
// choice chunk (Mistral, Groq's x_groq) is removed from it and, if the
// client asked, sent as OpenAI's own usage chunk just before [DONE].
func (tr *Translator) StreamChunk(b []byte, eos bool) []byte {
	// What the last call's events sent goes; a translator wrapping this
	// one may never ask.
	tr.sentText, tr.sentError = tr.sentText[:0], ""
	tr.r.Feed(b)
	var out []byte
	hint := len(b) + len(b)/8 + 64
	for {
		ev, ok := tr.r.Next()
		if !ok {
			break
		}
		out = tr.event(out, ev, hint, false)
	}
	if !eos {
		return out
	}
	if ev, ok := tr.r.Flush(); ok {
		// An event without its blank line: a server that ends on
		// "data: [DONE]\n" is done, one cut mid-event is not.
		out = tr.event(out, ev, hint, true)
	}
	if !tr.done && !tr.failed {
		out = tr.emitError(out, translator.GarbageError(tr.t.Provider.Name, "the stream ended before it was complete"))
	}
	return out
}

var eventPrefix = []byte("data: ")

// event translates one provider event; last marks an event the stream
// ended in the middle of.
func (tr *Translator) event(out []byte, ev sse.Event, hint int, last bool) []byte {
	if tr.done || tr.failed {
		return out
	}
	data := ev.Data
	if string(data) == "[DONE]" {
		tr.done = true
		if tr.includeUsage && !tr.usageSent && tr.pendingUsage != nil {
			out = sse.AppendData(out, tr.pendingUsage)
		}
		return append(out, sse.Done...)
	}
	hd, ok := scanHead(data)
	if !ok {
		what := "a stream event is not a JSON object"
		switch {
		case validJSON(data):
		case last:
			what = "the stream ended before it was complete"
		default:
			what = "a stream event is not JSON"
		}
		return tr.emitError(out, translator.GarbageError(tr.t.Provider.Name, what))
	}
	if (hd.err != nil && string(hd.err) != "null") || ev.Name == "error" {
		return tr.emitError(out, tr.streamError(data))
	}
	usage := tr.capture(&hd)
	if !nonEmptyArray(hd.choices) {
		if usage == nil || !tr.includeUsage || tr.usageSent {
			return out
		}
		tr.usageSent = true
		if len(hd.usage) == 0 || hd.usage[0] != '{' {
			// Usage only in x_groq: the chunk itself is Groq's.
			tr.deferUsage(&hd, usage)
			return sse.AppendData(out, tr.pendingUsage)
		}
		return tr.emit(out, &hd, data, usageKeep, hint)
	}
	um := usageDrop
	if tr.includeUsage {
		um = usageNull
		if usage != nil {
			tr.deferUsage(&hd, usage)
		}
	}
	return tr.emit(out, &hd, data, um, hint)
}

func (tr *Translator) emit(out []byte, hd *head, data []byte, um usageMode, hint int) []byte {
	if out == nil {
		out = make([]byte, 0, max(hint, len(data)+len(tr.clientModel)+16))
	}
	out = append(out, eventPrefix...)
	out = tr.appendObject(out, hd, data, true, um)
	return append(out, '\n', '\n')
}

// deferUsage builds the usage chunk OpenAI would have sent for usage that
// came on a choice chunk.
func (tr *Translator) deferUsage(hd *head, usage []byte) {
	b := append(tr.pendingUsage[:0], `{"id":`...)
	if s, ok := stringValue(hd.id); ok && len(s) > 0 {
		b = append(b, hd.id...)
	} else {
		b = append(b, tr.id...)
	}
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	if len(hd.created) > 0 && hd.created[0] >= '1' && hd.created[0] <= '9' {
		b = append(b, hd.created...)
	} else {
		b = strconv.AppendInt(b, tr.t.Created, 10)
	}
	b = append(b, `,"model":`...)
	b = append(b, tr.clientModel...)
	b = append(b, `,"choices":[],"usage":`...)
	b = tr.appendUsage(b, usage)
	tr.pendingUsage = append(b, '}')
}
