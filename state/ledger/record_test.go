package ledger

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"plain", "gpt-4o", "gpt-4o"},
		{"nul", "a\x00b\x00", "ab"},
		{"invalid utf-8", "gpt\xff-4o", "gpt\uFFFD-4o"},
		{"long ascii", strings.Repeat("a", 300), strings.Repeat("a", maxText)},
		{"cut inside a rune", "a" + strings.Repeat("é", 200), "a" + strings.Repeat("é", 127)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cleanText(tt.in); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzCleanText: whatever comes in, what is stored is valid UTF-8 without
// NUL, within the bound, and cleaning it again changes nothing.
func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"", "gpt-4o", "a\x00b", "\xff\xfe", strings.Repeat("é", 200), strings.Repeat("\x00", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := cleanText(in)
		if !utf8.ValidString(got) || strings.ContainsRune(got, 0) || len(got) > maxText {
			t.Fatalf("cleanText(%q) = %q: not valid UTF-8 without NUL within %d bytes", in, got, maxText)
		}
		if again := cleanText(got); again != got {
			t.Fatalf("cleanText is not idempotent: %q, then %q", got, again)
		}
	})
}
