package external

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PythonStrings reads a Python list of string literals, as Python's repr
// writes one (RouterBench keeps its prompts so): ['a', "b\n"].
func PythonStrings(s string) ([]string, error) {
	p := pyParser{s: s}
	p.space()
	if !p.eat('[') {
		return nil, errors.New("want '['")
	}
	var out []string
	for {
		p.space()
		if p.eat(']') {
			break
		}
		str, err := p.str()
		if err != nil {
			return nil, err
		}
		out = append(out, str)
		p.space()
		if p.eat(']') {
			break
		}
		if !p.eat(',') {
			return nil, errors.New("want ',' or ']' after a string")
		}
	}
	p.space()
	if p.i != len(p.s) {
		return nil, errors.New("text after the list")
	}
	return out, nil
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// simpleEscapes are Python's one-letter escapes.
var simpleEscapes = map[byte]string{
	'\\': "\\", '\'': "'", '"': "\"", 'n': "\n", 'r': "\r", 't': "\t",
	'a': "\a", 'b': "\b", 'f': "\f", 'v': "\v", '\n': "",
}

// str reads one single- or double-quoted literal.
func (p *pyParser) str() (string, error) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", errors.New("want a quoted string")
	}
	quote := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == quote:
			p.i++
			return b.String(), nil
		case c == '\n':
			return "", errors.New("a line break inside a string")
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.s) {
			break
		}
		e := p.s[p.i+1]
		p.i += 2
		if r, ok := simpleEscapes[e]; ok {
			b.WriteString(r)
			continue
		}
		digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
		if digits == 0 {
			// Python keeps an unknown escape as it is.
			b.WriteByte('\\')
			b.WriteByte(e)
			continue
		}
		if p.i+digits > len(p.s) {
			return "", errors.New("a short \\" + string(e) + " escape")
		}
		v, err := strconv.ParseUint(p.s[p.i:p.i+digits], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return "", errors.New("a bad \\" + string(e) + " escape")
		}
		b.WriteRune(rune(v))
		p.i += digits
	}
	return "", errors.New("an unterminated string")
}
