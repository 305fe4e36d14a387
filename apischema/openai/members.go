package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"unicode"
	"unicode/utf8"
)

// maxNesting bounds how deep a request body may nest: a tool's JSON Schema
// is the deepest thing the protocol carries, and the gateway's decoders
// and translators recurse over what they read.
const maxNesting = 128

// freeForm names members whose value is the client's own document (a JSON
// Schema, metadata, a token map): its member names are not fields of the
// protocol, so only exact duplicates are refused inside.
var freeForm = map[string]bool{"parameters": true, "schema": true, "metadata": true, "logit_bias": true}

// CheckMembers refuses a body that nests too deep, or whose objects hold a
// member twice, or two members whose names differ only in case: Go's
// decoder, which the gateway's rules read through, matches field names
// case-insensitively and keeps the last, while a provider keeps the one
// spelled exactly, so "messages" and "Messages" would have the gateway
// check one conversation and forward another. Malformed JSON is left to
// the decoder, whose error says where.
func CheckMembers(body []byte) *Error {
	s := memberScan{b: body}
	s.i = s.space(0)
	s.value(0, false)
	return s.err
}

type memberScan struct {
	b    []byte
	i    int
	err  *Error
	done bool // an error found, or malformed input
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
		s.value(depth, free || freeForm[name])
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
