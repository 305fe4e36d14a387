package filters

import (
	"bytes"
	"slices"
	"strings"

	"github.com/switchyard/switchyard/apischema/jsonform"
)

// unrestored are the members an answer's placeholders are never restored
// in: a model's thinking and its signature, encrypted reasoning and
// reasoning summaries. A client sends them back as they came, and the
// provider refuses one that changed, or would see a restored value the
// request had masked (they are not text a redaction masks).
var unrestored = []string{"thinking", "signature", "encrypted_content", "summary"}

func restorable(path []string) bool {
	for _, p := range path {
		if slices.Contains(unrestored, p) {
			return false
		}
	}
	return true
}

// Restoring reports whether the answer gets the masked values back.
func (r *Redaction) Restoring() bool { return r != nil && r.Restore && r.Masker.Counts() != nil }

// RestoreAnswer puts the masked values back into a whole answer, in the
// client's protocol: each placeholder the request's masker made, in every
// string but those of [unrestored]. A body that is not JSON is returned
// as it is.
func (r *Redaction) RestoreAnswer(b []byte) []byte {
	out, err := jsonform.EditStrings(b, func(path []string, s string) (string, bool) {
		if !restorable(path) || !strings.Contains(s, "[") {
			return s, false
		}
		restored := string(r.Masker.Restore([]byte(s)))
		return restored, restored != s
	})
	if err != nil {
		return b
	}
	return out
}

// RestoreStream puts the masked values back into a streamed answer, event
// by event, in the client's protocol (chat chunks, Messages or Responses
// events): bytes come in as they do, and go out as whole events. A
// placeholder the model wrote across two deltas ("[em", "ail_1]") is
// put back whole: an event whose last delta ends in what may begin a
// placeholder is held until the next one, and when that one continues the
// same member the start moves over to it. Events are never added or
// reordered, so numbered events (Responses' sequence_number) keep their
// numbers; a delta may be left empty. A placeholder split across deltas
// of two choices (n > 1) is left as the model wrote it.
func (r *Redaction) RestoreStream(b []byte, eos bool) []byte {
	st := &r.stream
	st.buf = append(st.buf, b...)
	var out []byte
	for {
		end := eventEnd(st.buf)
		if end < 0 {
			break
		}
		out = r.event(out, st.buf[:end])
		st.buf = st.buf[end:]
	}
	st.buf = append([]byte(nil), st.buf...) // what is left, apart from the chunk's array
	if eos {
		out = append(out, st.held.full...)
		out = append(out, st.buf...)
		*st = streamState{}
	}
	return out
}

// streamState is a streamed answer's restoration under way.
type streamState struct {
	// buf is the start of an event not yet complete.
	buf []byte
	// held is an event held back, its last delta ending in what may
	// begin a placeholder.
	held heldEvent
}

// heldEvent is an event whose delta at path ends in prefix, which may
// begin a placeholder the next event's delta finishes: full is the event
// as it is, cut the event without the prefix.
type heldEvent struct {
	full, cut []byte
	path      string
	prefix    string
}

// eventEnd is where the first whole event of b ends, after its blank
// line; -1 when b holds none.
func eventEnd(b []byte) int {
	i, j := bytes.Index(b, []byte("\n\n")), bytes.Index(b, []byte("\r\n\r\n"))
	switch {
	case i < 0 && j < 0:
		return -1
	case j < 0 || (i >= 0 && i < j):
		return i + 2
	}
	return j + 4
}

// event restores one whole event and appends what may go out now.
func (r *Redaction) event(out, ev []byte) []byte {
	st := &r.stream
	data, start, ok := eventData(ev)
	if !ok || reasoningEvent(data) {
		out = append(out, st.held.full...)
		st.held = heldEvent{}
		return append(out, ev...)
	}
	held := st.held
	continued := false
	var last struct {
		path, value string
	}
	edited, err := jsonform.EditStrings(data, func(path []string, s string) (string, bool) {
		if !restorable(path) {
			return s, false
		}
		p := strings.Join(path, ".")
		in := s
		if held.prefix != "" && p == held.path && !continued {
			in, continued = held.prefix+s, true
		}
		restored := string(r.Masker.Restore([]byte(in)))
		last.path, last.value = p, restored
		return restored, restored != s
	})
	if err != nil {
		out = append(out, st.held.full...)
		st.held = heldEvent{}
		return append(out, ev...)
	}
	if continued {
		out = append(out, held.cut...)
	} else {
		out = append(out, held.full...)
	}
	st.held = heldEvent{}
	full := splice(ev, start, len(data), edited)
	n := r.Masker.Pending([]byte(last.value))
	if n == 0 {
		return append(out, full...)
	}
	cut, err := jsonform.EditStrings(edited, func(path []string, s string) (string, bool) {
		if strings.Join(path, ".") == last.path && s == last.value {
			return s[:len(s)-n], true
		}
		return s, false
	})
	if err != nil {
		return append(out, full...)
	}
	st.held = heldEvent{full: full, cut: splice(ev, start, len(data), cut), path: last.path, prefix: last.value[len(last.value)-n:]}
	return out
}

// reasoningEvent reports whether an event is one of the Responses API's
// reasoning events (response.reasoning_summary_text.delta, ...): a
// reasoning summary is not restored, in a stream as in a whole answer
// ([unrestored]).
func reasoningEvent(data []byte) bool {
	t, found, err := jsonform.Member(data, "type")
	return err == nil && found && bytes.HasPrefix(t, []byte(`"response.reasoning`))
}

// eventData finds an event's one data line's JSON: its text and where it
// starts in ev. ok is false for an event without JSON data ("[DONE]", a
// comment) or with several data lines.
func eventData(ev []byte) (data []byte, start int, ok bool) {
	found := false
	for off := 0; off < len(ev); {
		line := ev[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if rest, isData := bytes.CutPrefix(line, []byte("data:")); isData {
			if found {
				return nil, 0, false
			}
			found = true
			trimmed := bytes.TrimLeft(rest, " ")
			start = off + len(line) - len(trimmed)
			data = bytes.TrimRight(trimmed, "\r\n")
		}
		off += len(line)
	}
	if !found || len(data) == 0 || data[0] != '{' {
		return nil, 0, false
	}
	return data, start, true
}

// splice is ev with its n bytes of data at start replaced by with.
func splice(ev []byte, start, n int, with []byte) []byte {
	out := make([]byte, 0, len(ev)-n+len(with))
	out = append(out, ev[:start]...)
	out = append(out, with...)
	return append(out, ev[start+n:]...)
}
