package policy

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of what a request is tagged with: its tags and its session
// travel into every ledger row, usage event and budget scope, so they
// stay few and short. 16 tags is what OpenAI's metadata holds.
const (
	MaxTags          = 16
	MaxTagValueBytes = 128
	MaxSessionBytes  = 128
)

// tagKeyRE is what a tag's key may be: a name, like the policy's own.
var tagKeyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Tag is one billing tag, key=value.
type Tag struct{ Key, Value string }

// String renders the tag as key=value.
func (t Tag) String() string { return t.Key + "=" + t.Value }

// TagProblem says what is wrong with the tag key=value, "" when nothing
// is: a key of up to 64 letters, digits, '.', '_' or '-' (from a letter or
// digit), a value of 1 to MaxTagValueBytes bytes of UTF-8 text without
// control characters or commas (the header's separator).
func TagProblem(key, value string) string {
	switch {
	case !tagKeyRE.MatchString(key):
		return fmt.Sprintf("tag key %q must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", clip(key))
	case value == "" || len(value) > MaxTagValueBytes:
		return fmt.Sprintf("tag %s must have a value of 1 to %d bytes", key, MaxTagValueBytes)
	case !utf8.ValidString(value) || strings.ContainsRune(value, ',') || strings.IndexFunc(value, unicode.IsControl) >= 0:
		return fmt.Sprintf("tag %s's value must be text without control characters or commas", key)
	}
	return ""
}

// SessionProblem says what is wrong with a session ID, "" when nothing
// is: 1 to MaxSessionBytes printable ASCII characters, no space.
func SessionProblem(id string) string {
	if id == "" || len(id) > MaxSessionBytes {
		return fmt.Sprintf("a session ID must be 1 to %d bytes", MaxSessionBytes)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return "a session ID must be printable ASCII without spaces"
		}
	}
	return ""
}

// clip shortens what a client sent for an error message.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// TagBudgetSpec is a budget of the requests carrying one tag.
type TagBudgetSpec struct {
	// Tag is key=value.
	Tag    string      `yaml:"tag"`
	Budget *BudgetSpec `yaml:"budget_usd"`
}

// tags compiles a key's tags.
func (c *compiler) tags(src source, d, field string, m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	if len(m) > MaxTags {
		c.at(src, d, field, "at most %d tags, got %d", MaxTags, len(m))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if why := TagProblem(k, m[k]); why != "" {
			c.at(src, d, field, "%s", why)
		}
	}
	return m
}

// tagBudgets compiles a tenant's budgets per tag.
func (c *compiler) tagBudgets(src source, d string, specs []TagBudgetSpec) map[Tag]Budget {
	if len(specs) == 0 {
		return nil
	}
	out := make(map[Tag]Budget, len(specs))
	for i, s := range specs {
		field := "tag_budgets[" + strconv.Itoa(i) + "]"
		k, v, ok := strings.Cut(s.Tag, "=")
		if !ok {
			c.at(src, d, field+".tag", "must be key=value, got %q", s.Tag)
			continue
		}
		if why := TagProblem(k, v); why != "" {
			c.at(src, d, field+".tag", "%s", why)
			continue
		}
		t := Tag{Key: k, Value: v}
		if _, dup := out[t]; dup {
			c.at(src, d, field+".tag", "%s has a budget already", t)
			continue
		}
		if s.Budget == nil {
			c.at(src, d, field, "budget_usd is required")
			continue
		}
		out[t] = c.budget(src, d, field+".budget_usd", s.Budget)
	}
	return out
}
