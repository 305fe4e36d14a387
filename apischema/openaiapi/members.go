package openaiapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// maxNesting bounds how deep a request body may nest: a tool's JSON Schema
// is the deepest thing the protocol carries, and the gateway's decoders
// and translators recurse over what they read.
const maxNesting = 128

// Form is what one client API's body is, for [DecodeBody].
type Form struct {
	// What names the request in the message for an empty body.
	What string
	// FreeForm names members whose value is the client's own document (a
	// JSON Schema, metadata, a tool's input): its member names are not
	// fields of the protocol, so only exact duplicates are refused inside.
	FreeForm map[string]bool
	// MaxElements bounds the array elements of the whole body (messages,
	// content blocks, tools, enum values...), 0 none: decoding an element
	// costs far more memory and time than its bytes, so a body of many
	// tiny blocks is refused before it is decoded.
	MaxElements int
}

// ChatForm is a chat completion request's.
var ChatForm = Form{
	What:        "chat completion request",
	FreeForm:    map[string]bool{"parameters": true, "schema": true, "metadata": true, "logit_bias": true},
	MaxElements: MaxElements,
}

// MaxElements is the bound on array elements of a chat-like request:
// about four times what a conversation filling a million-token context
// holds (a few thousand turns of a few blocks each).
const MaxElements = 50_000

// DecodeBody is the one way a client's body becomes a request, for every
// client API: an empty body, a body that nests too deep, holds too many
// array elements, or an object with a member twice or two members whose
// names differ only in case is refused before anything is decoded; then v
// is decoded, and a decoding failure is a 400 naming the field. Go's
// decoder, which the gateway's rules read through, matches field names
// case-insensitively and keeps the last, while a provider keeps the one
// spelled exactly, so "max_tokens" and "MAX_TOKENS" would have the
// gateway check one value and forward another.
func DecodeBody(body []byte, v any, f Form) *Error {
	if len(bytes.TrimSpace(body)) == 0 {
		return Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_body", "the request body is empty; send a JSON %s", f.What)
	}
	s := memberScan{b: body, form: f, fields: fieldsOf(reflect.TypeOf(v))}
	s.i = s.space(0)
	s.value(0, false)
	if s.err != nil {
		return s.err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return decodeError(err)
	}
	return nil
}

type memberScan struct {
	b        []byte
	i        int
	form     Form
	fields   *fieldNames
	elements int
	err      *Error
	done     bool // an error found, or malformed input
}

func (s *memberScan) space(i int) int {
	for i < len(s.b) && (s.b[i] == ' ' || s.b[i] == '\t' || s.b[i] == '\n' || s.b[i] == '\r') {
		i++
	}
	return i
}

func (s *memberScan) at(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

func (s *memberScan) malformed() { s.done = true }

func (s *memberScan) value(depth int, free bool) {
	switch {
	case s.done:
	case s.at('{'):
		s.object(depth+1, free)
	case s.at('['):
		s.array(depth+1, free)
	case s.at('"'):
		s.str()
	default:
		start := s.i
		for s.i < len(s.b) && !delimiter(s.b[s.i]) {
			s.i++
		}
		if s.i == start {
			s.malformed()
		}
	}
}

func delimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ',', ']', '}', ':', '"', '{', '[':
		return true
	}
	return false
}

func (s *memberScan) nest(depth int) bool {
	if depth > maxNesting {
		s.err = Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value", "the request body nests deeper than %d levels", maxNesting)
		s.done = true
		return false
	}
	return true
}

// str moves past the string at s.i and returns its raw contents.
func (s *memberScan) str() []byte {
	start := s.i + 1
	for j := start; ; {
		k := bytes.IndexByte(s.b[j:], '"')
		if k < 0 {
			s.malformed()
			return nil
		}
		j += k
		n := 0
		for p := j - 1; p >= start && s.b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			s.i = j + 1
			return s.b[start:j]
		}
		j++
	}
}

func (s *memberScan) array(depth int, free bool) {
	if !s.nest(depth) {
		return
	}
	s.i = s.space(s.i + 1)
	if s.at(']') {
		s.i++
		return
	}
	for !s.done {
		if s.elements++; s.form.MaxElements > 0 && s.elements > s.form.MaxElements {
			s.err = Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value",
				"the request body holds more than %d array elements (messages, content blocks, tools and the like); send fewer", s.form.MaxElements)
			s.done = true
			return
		}
		s.value(depth, free)
		s.i = s.space(s.i)
		switch {
		case s.at(','):
			s.i = s.space(s.i + 1)
		case s.at(']'):
			s.i++
			return
		default:
			s.malformed()
		}
	}
}

func (s *memberScan) object(depth int, free bool) {
	if !s.nest(depth) {
		return
	}
	s.i = s.space(s.i + 1)
	if s.at('}') {
		s.i++
		return
	}
	// Names are compared in a list while few, in a map once many, so that
	// no object costs quadratic time.
	var (
		names []string
		index map[string]int
	)
	for !s.done {
		if !s.at('"') {
			s.malformed()
			return
		}
		raw := s.str()
		if s.done {
			return
		}
		name := string(raw)
		if bytes.IndexByte(raw, '\\') >= 0 && json.Unmarshal(s.b[s.i-len(raw)-2:s.i], &name) != nil {
			s.malformed()
			return
		}
		key := s.key(name, free)
		if j := s.seen(names, index, key, free); j >= 0 {
			s.err = Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value",
				"the request body holds %q and %q in one object; send each member once, spelled as the API names it", Clip(names[j]), Clip(name)).WithParam(Clip(name))
			s.done = true
			return
		}
		if !free && s.fields.misspelt(name) {
			// Go's decoder would read it as the field; a provider, which
			// matches names exactly, would not see it at all.
			s.err = Errorf(http.StatusBadRequest, TypeInvalidRequest, "invalid_value",
				"the request body holds %q; send each member spelled as the API names it", Clip(name)).WithParam(Clip(name))
			s.done = true
			return
		}
		names = append(names, name)
		if index == nil && len(names) > 16 {
			index = make(map[string]int, 2*len(names))
			for j, n := range names {
				index[s.key(n, free)] = j
			}
		} else if index != nil {
			index[key] = len(names) - 1
		}
		s.i = s.space(s.i)
		if !s.at(':') {
			s.malformed()
			return
		}
		s.i = s.space(s.i + 1)
		s.value(depth, free || s.form.FreeForm[name])
		s.i = s.space(s.i)
		switch {
		case s.at(','):
			s.i = s.space(s.i + 1)
		case s.at('}'):
			s.i++
			return
		default:
			s.malformed()
		}
	}
}

func (s *memberScan) key(name string, free bool) string {
	if free {
		return name
	}
	return foldName(name)
}

// seen returns the index of the name already in the object under key, or -1.
func (s *memberScan) seen(names []string, index map[string]int, key string, free bool) int {
	if index != nil {
		if j, ok := index[key]; ok {
			return j
		}
		return -1
	}
	for j, n := range names {
		if s.key(n, free) == key {
			return j
		}
	}
	return -1
}

// foldName maps a name to one spelling for all its case variants, as
// encoding/json's case-insensitive match (bytes.EqualFold) sees them: each
// rune becomes the least rune of its Unicode simple-fold orbit, so "k",
// "K" and the Kelvin sign "K" are one.
func foldName(name string) string {
	b := make([]byte, 0, len(name))
	for _, r := range name {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b = utf8.AppendRune(b, m)
	}
	return string(b)
}

// fieldNames are the JSON member names a request type decodes, exactly
// and folded.
type fieldNames struct {
	exact, folded map[string]bool
}

// misspelt reports whether name is a field's name in other letter cases.
func (f *fieldNames) misspelt(name string) bool {
	return !f.exact[name] && f.folded[foldName(name)]
}

var fieldsCache sync.Map // reflect.Type → *fieldNames

// fieldsOf returns the member names of t and of every struct it holds.
func fieldsOf(t reflect.Type) *fieldNames {
	if f, ok := fieldsCache.Load(t); ok {
		return f.(*fieldNames)
	}
	f := &fieldNames{exact: map[string]bool{}, folded: map[string]bool{}}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			// An untagged field has no spelling of the API's to hold a
			// member to.
			if name != "" && sf.IsExported() {
				f.exact[name] = true
				f.folded[foldName(name)] = true
			}
			walk(sf.Type)
		}
	}
	walk(t)
	fieldsCache.Store(t, f)
	return f
}
