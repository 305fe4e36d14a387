package filters

import (
	"context"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/apischema/responsesapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/redact"
)

// Redaction is what was masked of a request's text before it reached a
// provider: the masker, which holds the values behind its placeholders
// and how many of each kind it masked, and whether the answer gets them
// back.
type Redaction struct {
	Masker  *redact.Masker
	Restore bool
	// stream is a streamed answer's restoration under way.
	stream streamState
}

// textOf are the members of each API's request that hold its text.
var textOf = map[policy.API][]jsonform.Pattern{
	policy.APIChatCompletions: openaiapi.ChatText,
	policy.APIEmbeddings:      openaiapi.EmbeddingsText,
	policy.APIMessages:        anthropicapi.MessagesText,
	policy.APICountTokens:     anthropicapi.MessagesText,
	policy.APIResponses:       responsesapi.RequestText,
}

// redaction is the redact option that applies to x: its caller's
// tenant's, else its route's; nil when neither has one.
func (x *Exchange) redaction() *policy.Redaction {
	if t := x.Caller.Tenant; t != nil && t.Redact != nil {
		return t.Redact
	}
	return x.Route.Redact
}

// RedactBody masks the sensitive spans of the request's text, where its
// tenant or route says so (policy.Redaction), before the request reaches
// a provider: the text members of the body (textOf) are rewritten, every
// other byte kept, and the body is read again, so that a translation and
// a pass-through send the same masked text. x.Redaction records what was
// masked. A request neither its route nor its tenant redacts costs a look
// at two pointers.
func (x *Exchange) RedactBody(ctx context.Context) error {
	r := x.redaction()
	if r == nil {
		return nil
	}
	m := redact.NewMasker(r.Kinds)
	paths := textOf[x.Route.API]
	body, err := jsonform.EditStrings(x.Body, func(path []string, s string) (string, bool) {
		if ctx.Err() != nil || !jsonform.MatchAny(paths, path) {
			return s, false
		}
		masked := m.Mask(s)
		return masked, masked != s
	})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	x.Redaction = &Redaction{Masker: m, Restore: r.Restore}
	if m.Counts() == nil {
		return nil
	}
	x.ReplaceBody(body)
	if e := decodeBody(x); e != nil {
		return e
	}
	return nil
}
