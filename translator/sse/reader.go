package sse

import "bytes"

// Event is one dispatched event. Data joins multiple data lines with "\n".
type Event struct {
	Name string
	Data []byte
}

// Reader splits a byte stream into events. It is not safe for concurrent
// use. The zero value is ready.
//
// A chunk is read where it lies: Feed copies nothing when the reader
// holds nothing, and once Next has read all it can, the reader keeps a
// copy of only what is left unfinished. Between chunks, then, a stream's
// reader holds no buffer unless an event spans two chunks: an answer may
// stream for minutes, and a gateway holds thousands of them.
type Reader struct {
	// Borrow, when set, makes an event's Data the fed chunk's or the
	// reader's own bytes instead of a copy: valid until the next Feed,
	// Next or Flush. For a caller done with each event before it reads
	// the next, it saves an allocation an event.
	Borrow bool

	// buf is what is left to read: the caller's chunk (borrowed) while
	// Next reads it, else the reader's own copy.
	buf      []byte
	borrowed bool
	name     []byte
	// line is the event's only data line so far, as it lies in buf, and
	// data the event's data once that is not enough (more lines, or a
	// line kept past its chunk): one copy of a usual event, not two.
	line    []byte
	data    []byte
	hasData bool
	// pendingCR is set when the last byte fed was a CR that may be the
	// first half of a CRLF split across chunks.
	pendingCR bool
}

// Feed adds stream bytes. b is read in place: it must stay unchanged
// until Next has returned false.
func (r *Reader) Feed(b []byte) {
	switch {
	case len(r.buf) == 0:
		r.buf, r.borrowed = b, true
	case r.borrowed:
		// Appending to the caller's chunk could write past its end.
		r.keep()
		r.buf = append(r.buf, b...)
	default:
		r.buf = append(r.buf, b...)
	}
}

// keep copies what the reader still needs of a borrowed chunk into its
// own storage, and lets go of what it no longer needs.
func (r *Reader) keep() {
	if r.line != nil {
		r.data, r.line = append(r.data[:0], r.line...), nil
	}
	if len(r.buf) == 0 {
		r.buf = nil
	} else if r.borrowed {
		r.buf = bytes.Clone(r.buf)
	}
	r.borrowed = false
}

// Buffered reports how many bytes of an unfinished line are held.
func (r *Reader) Buffered() int { return len(r.buf) }

// Next returns the next complete event. ok is false when more bytes are
// needed. Events without data are skipped, as the standard says.
func (r *Reader) Next() (ev Event, ok bool) {
	for {
		line, rest, found := r.cutLine()
		if !found {
			r.keep()
			return Event{}, false
		}
		r.buf = rest
		if len(line) == 0 {
			if !r.hasData {
				r.name = r.name[:0]
				continue
			}
			return r.dispatch(), true
		}
		r.field(line)
	}
}

// dispatch returns the event read so far and begins the next one.
func (r *Reader) dispatch() Event {
	d := r.line
	if d == nil {
		d = r.data
	}
	ev := Event{Name: string(r.name), Data: d}
	if !r.Borrow {
		ev.Data = append([]byte(nil), d...)
	}
	r.name, r.line, r.data, r.hasData = r.name[:0], nil, r.data[:0], false
	return ev
}

// Flush returns the event left when the stream ends without a final blank
// line, if it has data.
func (r *Reader) Flush() (Event, bool) {
	if len(r.buf) > 0 {
		r.field(r.buf)
	}
	r.buf, r.borrowed = nil, false
	if !r.hasData {
		return Event{}, false
	}
	return r.dispatch(), true
}

func (r *Reader) cutLine() (line, rest []byte, ok bool) {
	if r.pendingCR && len(r.buf) > 0 {
		r.pendingCR = false
		if r.buf[0] == '\n' {
			r.buf = r.buf[1:]
		}
	}
	// Two byte searches, not IndexAny: this runs on every streamed event,
	// and IndexAny tests the bytes one at a time.
	i := bytes.IndexByte(r.buf, '\n')
	if i < 0 {
		i = bytes.IndexByte(r.buf, '\r')
	} else if cr := bytes.IndexByte(r.buf[:i], '\r'); cr >= 0 {
		i = cr
	}
	if i < 0 {
		return nil, r.buf, false
	}
	line, rest = r.buf[:i], r.buf[i+1:]
	if r.buf[i] == '\r' {
		if len(rest) == 0 {
			r.pendingCR = true
		} else if rest[0] == '\n' {
			rest = rest[1:]
		}
	}
	return line, rest, true
}

func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		return
	}
	name, value, _ := bytes.Cut(line, []byte(":"))
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "data":
		if !r.hasData {
			r.line, r.hasData = value, true
			return
		}
		if r.line != nil {
			r.data, r.line = append(r.data[:0], r.line...), nil
		}
		r.data = append(r.data, '\n')
		r.data = append(r.data, value...)
	case "event":
		r.name = append(r.name[:0], value...)
	}
}

// AppendData appends one "data:" event (with its blank line) to dst.
func AppendData(dst, data []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, '\n', '\n')
}

// Done is the OpenAI end-of-stream event.
var Done = []byte("data: [DONE]\n\n")
