package jsonform

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// ErrSyntax is EditStrings' answer to a document that is not JSON.
var ErrSyntax = errors.New("not a JSON document")

// maxDepth bounds the nesting EditStrings follows: encoding/json's, so
// that whatever a parser read can be edited.
const maxDepth = 10000

// EditStrings returns the JSON document doc with the string values edit
// changes replaced. edit gets each string value's path (member names, and
// array indices in decimal, valid only during the call) and its text, and
// returns the new text and whether it changed it. Everything else of doc,
// the strings edit leaves included, is kept byte for byte, so a
// pass-through can change the text of a request and forward the rest as
// the client wrote it.
func EditStrings(doc []byte, edit func(path []string, s string) (string, bool)) ([]byte, error) {
	e := &editor{doc: doc, edit: edit}
	e.i = e.space(0)
	if err := e.value(0); err != nil {
		return nil, err
	}
	if e.space(e.i) != len(doc) {
		return nil, ErrSyntax
	}
	if e.out == nil {
		return doc, nil // nothing changed: no copy
	}
	return append(e.out, doc[e.last:]...), nil
}

type editor struct {
	doc  []byte
	i    int
	path []string
	edit func(path []string, s string) (string, bool)
	// out is the edited document up to last, once a string changed.
	out  []byte
	last int
}

func (e *editor) space(i int) int {
	for i < len(e.doc) && (e.doc[i] == ' ' || e.doc[i] == '\t' || e.doc[i] == '\n' || e.doc[i] == '\r') {
		i++
	}
	return i
}

func (e *editor) value(depth int) error {
	if depth > maxDepth || e.i >= len(e.doc) {
		return ErrSyntax
	}
	switch c := e.doc[e.i]; {
	case c == '{':
		return e.object(depth)
	case c == '[':
		return e.array(depth)
	case c == '"':
		start := e.i
		s, err := e.str()
		if err != nil {
			return err
		}
		if n, changed := e.edit(e.path, s); changed {
			e.out = AppendString(append(e.out, e.doc[e.last:start]...), n)
			e.last = e.i
		}
		return nil
	default:
		// A number, true, false or null: up to the next delimiter.
		start := e.i
		for e.i < len(e.doc) && !delimiter(e.doc[e.i]) {
			e.i++
		}
		if !literal(e.doc[start:e.i]) {
			return ErrSyntax
		}
		return nil
	}
}

// literal reports whether b is a JSON number, true, false or null: what
// json.Valid says of such a token, without its scanner, which a document
// of many small values would otherwise start once for each.
func literal(b []byte) bool {
	switch string(b) {
	case "true", "false", "null":
		return true
	}
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(b)
}

// digits returns the index after the decimal digits of b from i.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// delimiter reports whether c ends a number or a literal.
func delimiter(c byte) bool {
	return c == ',' || c == ']' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func (e *editor) object(depth int) error {
	e.i = e.space(e.i + 1)
	if e.i < len(e.doc) && e.doc[e.i] == '}' {
		e.i++
		return nil
	}
	for {
		if e.i >= len(e.doc) || e.doc[e.i] != '"' {
			return ErrSyntax
		}
		key, err := e.key()
		if err != nil {
			return err
		}
		e.i = e.space(e.i)
		if e.i >= len(e.doc) || e.doc[e.i] != ':' {
			return ErrSyntax
		}
		e.i = e.space(e.i + 1)
		if done, err := e.element(depth, key, '}'); err != nil || done {
			return err
		}
	}
}

func (e *editor) array(depth int) error {
	e.i = e.space(e.i + 1)
	if e.i < len(e.doc) && e.doc[e.i] == ']' {
		e.i++
		return nil
	}
	for n := 0; ; n++ {
		if done, err := e.element(depth, strconv.Itoa(n), ']'); err != nil || done {
			return err
		}
	}
}

// element reads the value of an object's member or an array's element,
// named seg in the path, and the comma or the closing delimiter after
// it; done is true at the close.
func (e *editor) element(depth int, seg string, close byte) (done bool, err error) {
	e.path = append(e.path, seg)
	if err := e.value(depth + 1); err != nil {
		return false, err
	}
	e.path = e.path[:len(e.path)-1]
	e.i = e.space(e.i)
	if e.i >= len(e.doc) {
		return false, ErrSyntax
	}
	switch e.doc[e.i] {
	case ',':
		e.i = e.space(e.i + 1)
		return false, nil
	case close:
		e.i++
		return true, nil
	}
	return false, ErrSyntax
}

// str reads the string at e.i and returns its text.
func (e *editor) str() (string, error) {
	raw, escaped, err := e.strRaw()
	if err != nil {
		return "", err
	}
	if !escaped && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	return unquote(raw)
}

// key reads the member name at e.i. It is only ever a path segment,
// which is valid only during edit's call, so unescaped it is the
// document's own bytes rather than a copy: every member of every streamed
// event passes here.
func (e *editor) key() (string, error) {
	raw, escaped, err := e.strRaw()
	if err != nil {
		return "", err
	}
	if !escaped && utf8.Valid(raw) {
		return unsafe.String(unsafe.SliceData(raw[1:]), len(raw)-2), nil
	}
	return unquote(raw)
}

// unquote decodes a string with escapes or invalid UTF-8 as encoding/json
// does.
func unquote(raw []byte) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", ErrSyntax
	}
	return s, nil
}

// strRaw returns the string at e.i with its quotes, and whether a
// backslash is in it. It looks for quotes and backslashes with byte
// searches rather than a byte at a time.
func (e *editor) strRaw() (raw []byte, escaped bool, err error) {
	start := e.i
	for j := start + 1; ; {
		k := bytes.IndexByte(e.doc[j:], '"')
		if k < 0 {
			return nil, false, ErrSyntax
		}
		q := j + k
		b := bytes.IndexByte(e.doc[j:q], '\\')
		if b < 0 {
			e.i = q + 1
			return e.doc[start:e.i], escaped, nil
		}
		escaped = true
		// Step over the escapes before the quote: a backslash takes the
		// byte after it, which may be the quote itself.
		p := j + b
		for p < q {
			if e.doc[p] == '\\' {
				p += 2
			} else {
				p++
			}
		}
		if p == q {
			e.i = q + 1
			return e.doc[start:e.i], true, nil
		}
		j = p
	}
}

// AppendString appends s as a JSON string, escaping only what JSON
// requires (quotes, backslashes, control characters), so text keeps its
// characters as they are; bytes that are not UTF-8 become U+FFFD, as
// encoding/json writes them. Runs that need no escape are copied whole.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(append(b, s[start:i]...), `\ufffd`...)
				start = i + 1
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Pattern is a path of a JSON document with wildcards: "*" stands for
// any one member name or array index, and "**", last, for any path below
// (or none).
type Pattern []string

// Patterns splits each of paths at its dots into a Pattern.
func Patterns(paths ...string) []Pattern {
	out := make([]Pattern, len(paths))
	for i, p := range paths {
		out[i] = strings.Split(p, ".")
	}
	return out
}

// Match reports whether path fits the pattern.
func (p Pattern) Match(path []string) bool {
	for i, seg := range p {
		if seg == "**" {
			return true
		}
		if i >= len(path) || (seg != "*" && seg != path[i]) {
			return false
		}
	}
	return len(path) == len(p)
}

// MatchAny reports whether path fits one of ps.
func MatchAny(ps []Pattern, path []string) bool {
	for _, p := range ps {
		if p.Match(path) {
			return true
		}
	}
	return false
}
