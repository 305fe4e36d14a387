package redact

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// Masker masks the sensitive spans of one request's text before it
// reaches a provider, each distinct value of a kind under a placeholder of
// its own ("[email_1]", "[email_2]"), so the model can still tell them
// apart and refer to them, and the same value is the same placeholder
// wherever it appears. It remembers what it masked, so that an answer's
// placeholders can be put back (Restore). Not safe for concurrent use.
type Masker struct {
	kinds []string
	// byValue maps kind, then value, to the value's placeholder.
	byValue map[string]map[string]string
	// values maps a placeholder to the value it stands for.
	values map[string]string
	// counts are the spans masked, by kind.
	counts map[string]int
}

// NewMasker returns a Masker of the kinds given (of AllKinds).
func NewMasker(kinds []string) *Masker { return &Masker{kinds: kinds} }

// Mask returns text with every span of the masker's kinds replaced by its
// placeholder.
func (m *Masker) Mask(text string) string {
	return replace(text, m.kinds, m.placeholder)
}

func (m *Masker) placeholder(kind, value string) string {
	if m.byValue == nil {
		m.byValue, m.values, m.counts = map[string]map[string]string{}, map[string]string{}, map[string]int{}
	}
	m.counts[kind]++
	of := m.byValue[kind]
	if of == nil {
		of = map[string]string{}
		m.byValue[kind] = of
	}
	if p, ok := of[value]; ok {
		return p
	}
	p := "[" + kind + "_" + strconv.Itoa(len(of)+1) + "]"
	of[value] = p
	m.values[p] = value
	return p
}

// Counts returns how many spans of each kind were masked, nil when none
// was: what the audit trail records of a redaction, never the values.
func (m *Masker) Counts() map[string]int { return m.counts }

// placeholderRE matches what a placeholder looks like.
var placeholderRE = regexp.MustCompile(`\[(?:` + strings.Join(AllKinds, "|") + `)_[0-9]+\]`)

// Restore returns b with every placeholder the masker made put back to the
// value it stands for; other text, and bracketed words it did not make,
// are left as they are. The values are what the patterns matched: letters,
// digits, spaces and `.+-_@%()`, so a value goes back into JSON text
// without escaping.
func (m *Masker) Restore(b []byte) []byte {
	if len(m.values) == 0 {
		return b
	}
	return placeholderRE.ReplaceAllFunc(b, func(p []byte) []byte {
		if v, ok := m.values[string(p)]; ok {
			return []byte(v)
		}
		return p
	})
}

// Pending is how many bytes at the end of s may begin a placeholder the
// masker made, cut short: a stream's delta that ends there may finish it
// in its next delta. 0 when s ends in no such prefix.
func (m *Masker) Pending(s []byte) int {
	if len(m.values) == 0 {
		return 0
	}
	i := bytes.LastIndexByte(s, '[')
	if i < 0 || len(s)-i > maxPlaceholder {
		return 0
	}
	tail := string(s[i:])
	for p := range m.values {
		if len(tail) < len(p) && strings.HasPrefix(p, tail) {
			return len(tail)
		}
	}
	return 0
}

// maxPlaceholder bounds a placeholder's length: the longest kind, and a
// count of up to nine digits.
const maxPlaceholder = len("[national_id_999999999]")
