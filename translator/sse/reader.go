package sse

import "bytes"

// Event is one dispatched event. Data joins multiple data lines with "\n".
type Event struct {
	Name string
	Data []byte
}

// Reader splits a byte stream into events. It is not safe for concurrent
// use. The zero value is ready.
type Reader struct {
	buf     []byte
	name    []byte
	data    []byte
	hasData bool
	// pendingCR is set when the last byte fed was a CR that may be the
	// first half of a CRLF split across chunks.
	pendingCR bool
}

// Feed appends stream bytes.
func (r *Reader) Feed(b []byte) { r.buf = append(r.buf, b...) }

// Buffered reports how many bytes of an unfinished line are held.
func (r *Reader) Buffered() int { return len(r.buf) }

// Next returns the next complete event. ok is false when more bytes are
// needed. Events without data are skipped, as the standard says.
func (r *Reader) Next() (ev Event, ok bool) {
	for {
		line, rest, found := r.cutLine()
		if !found {
			return Event{}, false
		}
		r.buf = rest
		if len(line) == 0 {
			if !r.hasData {
				r.name = r.name[:0]
				continue
			}
			ev = Event{Name: string(r.name), Data: append([]byte(nil), r.data...)}
			r.name, r.data, r.hasData = r.name[:0], r.data[:0], false
			return ev, true
		}
		r.field(line)
	}
}

// Flush returns the event left when the stream ends without a final blank
// line, if it has data.
func (r *Reader) Flush() (Event, bool) {
	if len(r.buf) > 0 {
		r.field(r.buf)
		r.buf = r.buf[:0]
	}
	if !r.hasData {
		return Event{}, false
	}
	ev := Event{Name: string(r.name), Data: append([]byte(nil), r.data...)}
	r.name, r.data, r.hasData = r.name[:0], r.data[:0], false
	return ev, true
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
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
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
