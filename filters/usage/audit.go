package usage

import (
	"strings"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/redact"
	"github.com/switchyard/switchyard/state/ledger"
)

// maxCapturedPrompt bounds a captured prompt: the audit trail must stay
// readable line by line whatever a client sends.
const maxCapturedPrompt = 32 << 10

// auditEvent is the audit record of an exchange. The prompt's hash is that
// of the body as the client sent it, whatever reached the provider; the
// prompt itself, masked, only when the caller's tenant captures prompts;
// what a redaction masked, as counts by kind.
func auditEvent(x *filters.Exchange, r *ledger.Record) *audit.Request {
	e := &audit.Request{
		RequestID: r.RequestID, Tenant: r.Tenant, App: r.App, Key: r.KeyName, Route: r.Route,
		RequestedModel: r.RequestedModel, ServedModel: r.ServedModel, Provider: r.Provider,
		RoutingReason: x.RouteReason, Attempts: r.Attempts, Status: r.Status, ErrorType: r.ErrorType,
		TraceID: r.TraceID, Tags: r.Tags, Session: r.SessionID,
	}
	if x.Redaction != nil {
		e.Redacted = x.Redaction.Masker.Counts()
	}
	e.PromptSHA256 = x.ClientBodySHA256()
	if x.Caller.Tenant != nil && x.Caller.Tenant.CapturePrompts {
		e.Prompt = capturedPrompt(x)
	}
	return e
}

// capturedPrompt is the text of the request, one "role: text" line per
// chat message (or the embedding inputs), with secrets and personal data
// masked, cut at maxCapturedPrompt bytes.
func capturedPrompt(x *filters.Exchange) string {
	var b strings.Builder
	switch {
	case x.Chat != nil:
		for _, m := range x.Chat.Messages {
			b.WriteString(m.Role)
			b.WriteString(": ")
			b.WriteString(m.Content.Text)
			for i, p := range m.Content.Parts {
				if p.Text == "" {
					continue
				}
				if i > 0 || m.Content.Text != "" {
					b.WriteString(" ")
				}
				b.WriteString(p.Text)
			}
			for _, tc := range m.ToolCalls {
				b.WriteString(" [" + tc.Function.Name + "] " + tc.Function.Arguments)
			}
			b.WriteString("\n")
		}
	case x.Embeddings != nil:
		b.WriteString(strings.Join(x.Embeddings.Input.Texts, "\n"))
	}
	text := strings.TrimSuffix(b.String(), "\n")
	if len(text) > 4*maxCapturedPrompt {
		// Masking shrinks text at most 2.5 times ("[secret]" for a key of
		// 20 bytes or more), so the part kept is masked whole.
		text = strings.ToValidUTF8(text[:4*maxCapturedPrompt], "")
	}
	masked := redact.Mask(text)
	if len(masked) > maxCapturedPrompt {
		masked = strings.ToValidUTF8(masked[:maxCapturedPrompt], "") + " [truncated]"
	}
	return masked
}
