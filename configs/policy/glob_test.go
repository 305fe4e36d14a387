package policy

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzGlobMatch holds globMatch to the regular expression a pattern
// stands for: its text quoted, each '*' any run of characters.
func FuzzGlobMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{"claude-*", "claude-opus-5-5"}, {"openai/*", "openai/gpt-7"}, {"*", ""}, {"a*b*c", "abc"},
		{"a*b*c", "ab"}, {"*-mini", "gpt-4o-mini"}, {"o*", "o"}, {"gpt-*-x*", "gpt--x"}, {"a*a", "a"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			t.Skip("the reference expression takes UTF-8 only; names are ASCII")
		}
		parts := strings.Split(pattern, "*")
		quoted := make([]string, len(parts))
		for i, p := range parts {
			quoted[i] = regexp.QuoteMeta(p)
		}
		want := regexp.MustCompile(`(?s)\A` + strings.Join(quoted, ".*") + `\z`).MatchString(name)
		if got := globMatch(parts, name); got != want {
			t.Fatalf("globMatch(%q, %q) = %v, want %v", pattern, name, got, want)
		}
	})
}
