package openai

import (
	"bytes"
	"encoding/json"

	"github.com/switchyard/switchyard/apischema/jsonform"
)

// The translator patches JSON rather than decoding it into maps and
// encoding it again: a patch is one pass that copies untouched values as
// bytes, so unknown fields survive, key order is kept and a 10 MiB body of
// base64 images costs a memmove instead of a reflection walk.
//
// The scanner trusts its input's syntax where it copies raw values (callers
// check untrusted provider bytes first, with scanHead, which reads the
// object with validObjectMembers; request bodies have already been
// decoded by openai.ParseChatRequest), but it never reads out of bounds on
// malformed input: it reports it.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that opens at b[i], or
// -1 if it is not closed.
func stringEnd(b []byte, i int) int {
	j := i + 1
	// Most strings an event holds are short (keys, ids, a token or two of
	// content): a plain loop finds their end before bytes.IndexByte has
	// set up its vector search.
	for end := min(len(b), j+shortString); j < end; j++ {
		switch b[j] {
		case '"':
			return j + 1
		case '\\':
			j++
		}
	}
	if j >= len(b) {
		return -1
	}
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// The quote ends the string unless an odd number of backslashes
		// escapes it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// shortString is how far stringEnd looks byte by byte.
const shortString = 16

// valueEnd returns the index just past the value that starts at b[i], or
// -1 if there is none.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case ',', ':', '}', ']':
		return -1
	default:
		j := i
		for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ':' && b[j] != '"' {
			j++
		}
		return j
	}
}

// members iterates over the members of one JSON object.
type members struct {
	b   []byte
	i   int
	bad bool
	// valid: the object is checked as it is read, as validJSON would
	// check it (validObjectMembers); n counts the members read so far.
	valid bool
	n     int
}

// objectMembers starts iterating over the object in b (surrounding space
// allowed); ok is false when b holds no object.
func objectMembers(b []byte) (m members, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return members{}, false
	}
	return members{b: b, i: i + 1}, true
}

// validObjectMembers is objectMembers for untrusted bytes: b must be one
// valid JSON object and nothing but space around it, or the iteration
// ends with m.bad. It reads each byte once where validJSON followed by
// objectMembers read the object twice, on every streamed event.
func validObjectMembers(b []byte) (m members, ok bool) {
	m, ok = objectMembers(b)
	m.valid = true
	return m, ok
}

// next returns the next member: its key as written (without quotes, escapes
// kept) and its raw value. ok is false at the end of the object, and m.bad
// then tells whether it ended malformed.
func (m *members) next() (key, val []byte, ok bool) {
	if m.bad {
		return nil, nil, false
	}
	i := skipSpace(m.b, m.i)
	comma := false
	if i < len(m.b) && m.b[i] == ',' && (!m.valid || m.n > 0) {
		i, comma = skipSpace(m.b, i+1), true
	}
	if i >= len(m.b) || m.b[i] != '"' {
		m.bad = i >= len(m.b) || m.b[i] != '}' || m.valid && (comma || skipSpace(m.b, i+1) != len(m.b))
		return nil, nil, false
	}
	if m.valid && m.n > 0 && !comma {
		m.bad = true
		return nil, nil, false
	}
	var ke int
	if m.valid {
		ke = validStringEnd(m.b, i)
	} else {
		ke = stringEnd(m.b, i)
	}
	if ke < 0 {
		m.bad = true
		return nil, nil, false
	}
	key = m.b[i+1 : ke-1]
	c := skipSpace(m.b, ke)
	if c >= len(m.b) || m.b[c] != ':' {
		m.bad = true
		return nil, nil, false
	}
	v := skipSpace(m.b, c+1)
	var ve int
	if m.valid {
		ve = validEnd(m.b, v, 1)
	} else {
		ve = valueEnd(m.b, v)
	}
	if ve < 0 {
		m.bad = true
		return nil, nil, false
	}
	m.i = ve
	m.n++
	return key, m.b[v:ve], true
}

// elements iterates over the elements of one JSON array.
type elements struct {
	b   []byte
	i   int
	bad bool
}

// arrayElements starts iterating over the array in b; ok is false when b
// holds no array.
func arrayElements(b []byte) (e elements, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return elements{}, false
	}
	return elements{b: b, i: i + 1}, true
}

// next returns the next element's raw value.
func (e *elements) next() (val []byte, ok bool) {
	if e.bad {
		return nil, false
	}
	i := skipSpace(e.b, e.i)
	if i < len(e.b) && e.b[i] == ',' {
		i = skipSpace(e.b, i+1)
	}
	if i >= len(e.b) || e.b[i] == ']' {
		e.bad = i >= len(e.b)
		return nil, false
	}
	ve := valueEnd(e.b, i)
	if ve < 0 {
		e.bad = true
		return nil, false
	}
	e.i = ve
	return e.b[i:ve], true
}

// keyBuf holds one canonical key without allocating.
type keyBuf [40]byte

// canon returns raw's name as the gateway matches it: unescaped and lower
// case, so that neither "Model" nor "mod\u0065l" slips past a rule that
// owns "model" (Go decoders upstream match keys case-insensitively). Keys
// too long to be any name the gateway knows come back as "".
func (kb *keyBuf) canon(raw []byte) []byte {
	if len(raw) <= len(kb) {
		i := 0
		for ; i < len(raw); i++ {
			c := raw[i]
			if c == '\\' {
				break
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			kb[i] = c
		}
		if i == len(raw) {
			return kb[:len(raw)]
		}
	} else if bytes.IndexByte(raw, '\\') < 0 {
		return nil
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) != nil || len(s) > len(kb) {
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		kb[i] = c
	}
	return kb[:len(s)]
}

// isEmptyValue reports whether a raw value asks for nothing: null, false,
// "", {} or [].
func isEmptyValue(v []byte) bool {
	switch string(v) {
	case "null", "false", `""`, "{}", "[]":
		return true
	}
	if len(v) >= 2 && (v[0] == '{' || v[0] == '[') {
		return skipSpace(v, 1) == len(v)-1
	}
	return false
}

// nonEmptyArray reports whether v is an array with at least one element.
func nonEmptyArray(v []byte) bool {
	if len(v) < 2 || v[0] != '[' {
		return false
	}
	i := skipSpace(v, 1)
	return i < len(v) && v[i] != ']'
}

// stringValue returns the text of a raw JSON string value; ok is false for
// any other value.
func stringValue(v []byte) (s []byte, ok bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner, true
	}
	var str string
	if json.Unmarshal(v, &str) != nil {
		return nil, false
	}
	return []byte(str), true
}

// writer appends one JSON object's members, commas included.
type writer struct {
	out  []byte
	some bool
}

func (w *writer) open()  { w.out = append(w.out, '{') }
func (w *writer) close() { w.out = append(w.out, '}') }

// key writes a member's key, quoted; name must need no escaping.
func (w *writer) key(name string) {
	if w.some {
		w.out = append(w.out, ',')
	}
	w.some = true
	w.out = append(w.out, '"')
	w.out = append(w.out, name...)
	w.out = append(w.out, '"', ':')
}

// rawKey writes a member's key as the input spelled it.
func (w *writer) rawKey(raw []byte) {
	if w.some {
		w.out = append(w.out, ',')
	}
	w.some = true
	w.out = append(w.out, '"')
	w.out = append(w.out, raw...)
	w.out = append(w.out, '"', ':')
}

// member writes a member with a raw value.
func (w *writer) member(rawKey, val []byte) {
	w.rawKey(rawKey)
	w.out = append(w.out, val...)
}

// appendMembers writes the object obj again, each member as f writes it
// through w. Anything but an object is copied as it is. The writer goes to
// f and back by value: a pointer would make every object cost an
// allocation, which on a stream is every event.
func appendMembers(out, obj []byte, f func(w writer, key, val []byte) writer) []byte {
	m, ok := objectMembers(obj)
	if !ok {
		return append(out, obj...)
	}
	w := writer{out: out}
	w.open()
	for k, v, ok := m.next(); ok; k, v, ok = m.next() {
		w = f(w, k, v)
	}
	w.close()
	return w.out
}

// appendArray writes the array arr again, each element as f writes it.
// Anything but an array is copied as it is.
func appendArray(out, arr []byte, f func(out, el []byte) []byte) []byte {
	els, ok := arrayElements(arr)
	if !ok {
		return append(out, arr...)
	}
	out = append(out, '[')
	for n := 0; ; n++ {
		el, more := els.next()
		if !more {
			break
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = f(out, el)
	}
	return append(out, ']')
}

// appendCompactString appends a valid JSON value, without the space
// between its tokens, as a JSON string.
func appendCompactString(out, v []byte) []byte {
	var compact []byte
	inString := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inString && c == '\\' && i+1 < len(v):
			compact = append(compact, c, v[i+1])
			i++
			continue
		case c == '"':
			inString = !inString
		case !inString && isSpace(c):
			continue
		}
		compact = append(compact, c)
	}
	return jsonform.AppendString(out, string(compact))
}

// maxDepth bounds nesting as encoding/json does, so that hostile input
// cannot exhaust the stack.
const maxDepth = 10000

// validJSON reports whether b is one JSON value with optional surrounding
// space: json.Valid's answer at a fraction of its cost, which matters on
// every streamed event.
func validJSON(b []byte) bool {
	i := validEnd(b, skipSpace(b, 0), 0)
	return i >= 0 && skipSpace(b, i) == len(b)
}

// validEnd returns the index just past the valid value at b[i], or -1.
func validEnd(b []byte, i, depth int) int {
	if i >= len(b) || depth > maxDepth {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		return validStringEnd(b, i)
	case c == '{':
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			if i = validStringEnd(b, i); i < 0 {
				return -1
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return -1
			}
			if i = validEnd(b, skipSpace(b, i+1), depth+1); i < 0 {
				return -1
			}
			switch i = skipSpace(b, i); {
			case i >= len(b):
				return -1
			case b[i] == '}':
				return i + 1
			case b[i] != ',':
				return -1
			}
			i = skipSpace(b, i+1)
		}
	case c == '[':
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = validEnd(b, i, depth+1); i < 0 {
				return -1
			}
			switch i = skipSpace(b, i); {
			case i >= len(b):
				return -1
			case b[i] == ']':
				return i + 1
			case b[i] != ',':
				return -1
			}
			i = skipSpace(b, i+1)
		}
	case c == 't':
		return literalEnd(b, i, "true")
	case c == 'f':
		return literalEnd(b, i, "false")
	case c == 'n':
		return literalEnd(b, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return numberEnd(b, i)
	}
	return -1
}

func literalEnd(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// validStringEnd checks the string at b[i] as JSON defines it: no raw
// control characters, only the defined escapes.
func validStringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		case c == '\\':
			if j+1 >= len(b) {
				return -1
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(b) {
					return -1
				}
				for _, h := range b[j+2 : j+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				j += 5
			default:
				return -1
			}
		}
	}
	return -1
}

func numberEnd(b []byte, i int) int {
	digits := func(i int) int {
		j := i
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	default:
		if i = digits(i); i < 0 {
			return -1
		}
	}
	if i < len(b) && b[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}
