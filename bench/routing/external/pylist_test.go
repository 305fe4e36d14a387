package external

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestPythonStrings(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{name: "empty", in: "[]", want: nil},
		{name: "one single-quoted", in: `['What is 2+2?\nA) 3\nB) 4']`, want: []string{"What is 2+2?\nA) 3\nB) 4"}},
		{name: "double-quoted holding a quote", in: `["Kyle's legs"]`, want: []string{"Kyle's legs"}},
		{name: "escaped quotes and backslash", in: `['it\'s "x" \\ y']`, want: []string{`it's "x" \ y`}},
		{name: "two, spaced, trailing comma", in: " [ 'a' , \"b\" , ] ", want: []string{"a", "b"}},
		{name: "hex and unicode escapes", in: `['\xe9\u20ac\U0001F600']`, want: []string{"é€😀"}},
		{name: "unknown escape kept", in: `['a\d']`, want: []string{`a\d`}},
		{name: "line continuation", in: "['a\\\nb']", want: []string{"ab"}},
		{name: "not a list", in: `'a'`, wantErr: true},
		{name: "unterminated", in: `['a]`, wantErr: true},
		{name: "missing comma", in: `['a' 'b']`, wantErr: true},
		{name: "text after", in: `['a'] x`, wantErr: true},
		{name: "short hex escape", in: `['\x4']`, wantErr: true},
		{name: "rune out of range", in: `['\U00110000']`, wantErr: true},
		{name: "a number", in: `[1]`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PythonStrings(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("PythonStrings(%q): error %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, got); d != "" && !tt.wantErr {
				t.Errorf("PythonStrings(%q) (-want +got):\n%s", tt.in, d)
			}
		})
	}
}

// FuzzPythonStrings: on any input the parser ends without panicking, and
// a list of two strings written as Python's repr writes them reads back
// as those strings.
func FuzzPythonStrings(f *testing.F) {
	f.Add("a", "b\n")
	f.Add("it's", `say "hi" \ é😀`)
	f.Add("[", "\x00\t")
	f.Fuzz(func(t *testing.T, a, b string) {
		_, _ = PythonStrings(a)
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		in := "[" + pyRepr(a) + ", " + pyRepr(b) + "]"
		got, err := PythonStrings(in)
		if err != nil {
			t.Fatalf("PythonStrings(%q): %v", in, err)
		}
		if d := cmp.Diff([]string{a, b}, got); d != "" {
			t.Errorf("PythonStrings(%q) (-want +got):\n%s", in, d)
		}
	})
}

// pyRepr writes s as Python's repr does: single quotes unless s holds one
// and no double quote, control characters escaped.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == '\\' || r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}
