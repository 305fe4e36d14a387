package policy

import (
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/redact"
)

// RedactSpec masks the sensitive spans of a request's text (keys, card
// numbers, national IDs, e-mail addresses, phone numbers, as the redact
// package detects them) before it reaches a provider.
type RedactSpec struct {
	// Kinds are what is masked: secret, email, national_id,
	// card_number, phone (default: all of them).
	Kinds []string `yaml:"kinds"`
	// Restore puts the masked values back into the answer, where the
	// model repeats a placeholder; without it the client gets the answer
	// as the provider wrote it.
	Restore bool `yaml:"restore"`
}

// Redaction is a compiled redact option.
type Redaction struct {
	// Kinds are the kinds masked, of redact.AllKinds.
	Kinds   []string
	Restore bool
}

// redaction compiles a redact option of a route or tenant; api is the
// route's, "" for a tenant's, whose requests may be of any API.
func (c *compiler) redaction(src source, d string, s *RedactSpec, api API, known bool) *Redaction {
	if s == nil {
		return nil
	}
	r := &Redaction{Kinds: redact.AllKinds, Restore: s.Restore}
	if s.Kinds != nil {
		if len(s.Kinds) == 0 {
			c.at(src, d, "redact.kinds", "names no kind; leave it out to mask every kind (%s)", strings.Join(redact.AllKinds, ", "))
		}
		for i, k := range s.Kinds {
			if !slices.Contains(redact.AllKinds, k) {
				c.at(src, d, "redact.kinds["+strconv.Itoa(i)+"]", "must be one of %s; got %q", strings.Join(redact.AllKinds, ", "), k)
			}
		}
		r.Kinds = s.Kinds
	}
	switch {
	case api == "" || !known:
	case !api.Models():
		c.at(src, d, "redact", "route api %s sends nothing to a provider; redaction applies to the model routes", api)
	case s.Restore && !api.Writes():
		c.at(src, d, "redact.restore", "route api %s answers with no text to restore; restore applies to chat_completions, messages and responses", api)
	}
	return r
}
