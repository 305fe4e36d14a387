package tracing

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/redact"
)

// message is one message of gen_ai.input.messages or
// gen_ai.output.messages, as the conventions shape them; only text parts
// are recorded.
type message struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

type part struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// cutMark ends a text cut to its bound.
const cutMark = " [cut]"

// content records the request's prompt and answer on span, as the
// conventions' opt-in event: each masked by redact (secrets and personal
// data), each list bounded to max bytes of text, the latest messages kept.
func content(span trace.Span, x *filters.Exchange, max int, at time.Time) {
	var in []message
	switch {
	case x.Chat != nil:
		for i := range x.Chat.Messages {
			m := &x.Chat.Messages[i]
			in = append(in, message{Role: m.Role, Parts: []part{{Type: "text", Content: m.Content.PlainText()}}})
		}
	case x.Embeddings != nil:
		for _, t := range x.Embeddings.Input.Texts {
			in = append(in, message{Role: "user", Parts: []part{{Type: "text", Content: t}}})
		}
	}
	answer := x.Trace.Response.Text
	if x.Response.Streaming {
		answer = string(x.Sent.Text)
	}
	inJSON := encode(bound(in, max))
	outJSON := encode(bound([]message{{Role: "assistant", Parts: []part{{Type: "text", Content: answer}}}}, max))
	span.AddEvent(eventContent, trace.WithTimestamp(at), trace.WithAttributes(
		genaiInputMessages.String(inJSON), genaiOutputMessages.String(outJSON)))
}

// bound masks each text and keeps at most max bytes of text in all, the
// latest messages first, cutting the oldest one kept.
func bound(msgs []message, max int) []message {
	left := max
	var out []message
	for i := len(msgs) - 1; i >= 0 && left > 0; i-- {
		m := msgs[i]
		text := m.Parts[0].Content
		if len(text) > 4*max {
			// Masking shrinks text at most 2.5 times, so what is kept is
			// masked whole.
			text = cut(text, 4*max)
		}
		text = redact.Mask(text)
		if len(text) > left {
			text = cut(text, left) + cutMark
		}
		left -= len(text)
		out = append([]message{{Role: m.Role, Parts: []part{{Type: "text", Content: text}}}}, out...)
	}
	return out
}

// cut keeps the first n bytes of s, on a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func encode(msgs []message) string {
	if msgs == nil {
		msgs = []message{}
	}
	b, _ := json.Marshal(msgs) // plain strings: cannot fail
	return string(b)
}
