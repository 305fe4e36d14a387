package openai

import (
	"encoding/json"
	"math"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// usageFields is what the gateway reads of a usage object: OpenAI's, and
// the cache hits DeepSeek reports beside OpenAI's details.
type usageFields struct {
	openaiapi.Usage
	PromptCacheHitTokens *int `json:"prompt_cache_hit_tokens"`
}

// readUsage reads a usage object as encoding/json.Unmarshal reads it into
// usageFields, ok false where Unmarshal would fail, but without
// reflection: it runs on every answer, and Unmarshal's reflection was
// the largest single cost of translating one. An object with an escape or
// a byte beyond ASCII is left to Unmarshal: a key could then be a known
// name only by Unicode's case folding, which encoding/json applies. raw
// must be valid JSON (the whole answer was checked).
func readUsage(raw []byte) (u usageFields, ok bool) {
	if !plain(raw) {
		var u usageFields
		err := json.Unmarshal(raw, &u)
		return u, err == nil
	}
	m, ok := objectMembers(raw)
	if !ok {
		return u, false
	}
	var kb keyBuf
	for k, v, more := m.next(); more; k, v, more = m.next() {
		switch string(kb.canon(k)) {
		case "prompt_tokens":
			ok = intInto(v, &u.PromptTokens)
		case "completion_tokens":
			ok = intInto(v, &u.CompletionTokens)
		case "total_tokens":
			ok = intInto(v, &u.TotalTokens)
		case "prompt_cache_hit_tokens":
			ok = intPointerInto(v, &u.PromptCacheHitTokens)
		case "prompt_tokens_details":
			ok = detailsInto(v, &u.PromptTokensDetails, promptDetails, func(i int, v []byte, d *openaiapi.PromptTokensDetails) bool {
				return intInto(v, [...]*int{&d.CachedTokens, &d.CacheWriteTokens}[i])
			})
		case "completion_tokens_details":
			ok = detailsInto(v, &u.CompletionTokensDetails, completionDetails, func(_ int, v []byte, d *openaiapi.CompletionTokensDetails) bool {
				return intInto(v, &d.ReasoningTokens)
			})
		}
		if !ok {
			return u, false
		}
	}
	return u, !m.bad
}

// The members of the details objects the gateway reads, in the order
// their readers number them.
var (
	promptDetails     = []string{"cached_tokens", "cache_write_tokens"}
	completionDetails = []string{"reasoning_tokens"}
)

// detailsInto reads a details object into *p as encoding/json does: null
// clears the pointer, an object fills the struct it points to (a new one
// if nil), each member named in names through field with its index, the
// others skipped; anything else fails.
func detailsInto[T any](v []byte, p **T, names []string, field func(i int, v []byte, d *T) bool) bool {
	if string(v) == "null" {
		*p = nil
		return true
	}
	m, ok := objectMembers(v)
	if !ok {
		return false
	}
	if *p == nil {
		*p = new(T)
	}
	var kb keyBuf
	for k, v, more := m.next(); more; k, v, more = m.next() {
		key := kb.canon(k)
		for i, name := range names {
			if string(key) == name && !field(i, v, *p) {
				return false
			}
		}
	}
	return !m.bad
}

// intInto stores a JSON integer in *p; null leaves it as it is, as
// encoding/json does. A fraction, an exponent, a number beyond int's
// range or any other value fails.
func intInto(v []byte, p *int) bool {
	if string(v) == "null" {
		return true
	}
	n, ok := parseInt(v)
	if ok {
		*p = n
	}
	return ok
}

// intPointerInto is intInto for a pointer, which null clears.
func intPointerInto(v []byte, p **int) bool {
	if string(v) == "null" {
		*p = nil
		return true
	}
	n, ok := parseInt(v)
	if ok {
		*p = &n
	}
	return ok
}

func parseInt(v []byte) (int, bool) {
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxUint64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case !neg && n <= math.MaxInt64:
		return int(n), true
	case neg && n <= 1<<63:
		return int(-n), true
	}
	return 0, false
}

// plain reports whether b holds neither an escape nor a byte beyond ASCII.
func plain(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}
