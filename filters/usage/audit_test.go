package usage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/redact"
)

func TestAuditEvent(t *testing.T) {
	p := testPolicyCompiled(t)
	const chat = `{"model":"gpt","messages":[` +
		`{"role":"system","content":"You help."},` +
		`{"role":"user","content":[{"type":"text","text":"mail ana@example.com"},{"type":"image_url","image_url":{"url":"https://x/y.png"}},{"type":"text","text":"key sk-FAKEfakefakefakefake"}]}]}`
	tests := []struct {
		name       string
		tenant     string
		body       string
		wantPrompt string
	}{
		{"capture off: hash only", "acme", chat, ""},
		{"capture on: masked prompt", "spy", chat, "system: You help.\nuser: mail [email] key [secret]"},
		{
			"capture on: a huge prompt is cut", "spy",
			`{"model":"gpt","messages":[{"role":"user","content":"` + strings.Repeat("a", 3*maxCapturedPrompt) + `"}]}`,
			"user: " + strings.Repeat("a", maxCapturedPrompt-len("user: ")) + " [truncated]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := exchange(t, p, tt.body)
			x.Caller.Tenant = tenant(t, p, tt.tenant)
			r := RecordOf(x, nil, t0)
			e := auditEvent(x, &r)
			sum := sha256.Sum256([]byte(tt.body))
			if e.PromptSHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("prompt hash %s, want the body's %x", e.PromptSHA256, sum)
			}
			if e.Prompt != tt.wantPrompt {
				t.Errorf("prompt %.200q, want %.200q", e.Prompt, tt.wantPrompt)
			}
			if e.Key != "acme-web" || e.RoutingReason != x.RouteReason || e.Route != "chat" {
				t.Errorf("event %+v lacks who, why or where", e)
			}
		})
	}
}

// TestTraceIDInRecordAndAudit: a traced request's ledger row and audit
// line name its trace; an untraced one's name none.
func TestTraceIDInRecordAndAudit(t *testing.T) {
	p := testPolicyCompiled(t)
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
	})
	for _, tt := range []struct {
		name  string
		trace *filters.Trace
		want  string
	}{
		{"tracing off", nil, ""},
		{"traced", filters.NewTrace(trace.SpanContext{}, sc, nil), "4bf92f3577b34da6a3ce929d0e0e4736"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := exchange(t, p, `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`)
			x.Caller.Tenant = tenant(t, p, "acme")
			x.Trace = tt.trace
			r := RecordOf(x, nil, t0)
			if r.TraceID != tt.want || auditEvent(x, &r).TraceID != tt.want {
				t.Errorf("record %q, audit %q; want %q", r.TraceID, auditEvent(x, &r).TraceID, tt.want)
			}
		})
	}
}

func TestAuditEventOfEmbeddings(t *testing.T) {
	p := testPolicyCompiled(t)
	body := `{"model":"e","input":["call +351 912 345 678","plain"]}`
	req, err := openaiapi.ParseEmbeddingsRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	x := &filters.Exchange{ID: "e1", Started: t0, Policy: p, Route: p.Routes[0], Body: []byte(body), Embeddings: req,
		Caller: filters.Caller{Tenant: tenant(t, p, "spy")}}
	r := RecordOf(x, nil, t0)
	if got, want := auditEvent(x, &r).Prompt, "call [phone]\nplain"; got != want {
		t.Errorf("prompt %q, want %q", got, want)
	}
}

// TestAuditOfARedactedRequest: the audit line of a request whose text was
// masked before it reached a provider counts what was masked, by kind,
// never the values, and still hashes the body the client sent.
func TestAuditOfARedactedRequest(t *testing.T) {
	p := testPolicyCompiled(t)
	const body = `{"model":"gpt","messages":[{"role":"user","content":"mail ana@example.com and bo@example.org, card 4111 1111 1111 1111"}]}`
	x := exchange(t, p, body)
	x.Caller.Tenant = tenant(t, p, "acme")
	m := redact.NewMasker(redact.AllKinds)
	masked := m.Mask("mail ana@example.com and bo@example.org, card 4111 1111 1111 1111")
	x.ReplaceBody([]byte(`{"model":"gpt","messages":[{"role":"user","content":"` + masked + `"}]}`))
	x.Redaction = &filters.Redaction{Masker: m}
	r := RecordOf(x, nil, t0)
	var trail bytes.Buffer
	audit.New(&trail, "test").Request(context.Background(), auditEvent(x, &r))
	line := trail.String()
	sum := sha256.Sum256([]byte(body))
	if !strings.Contains(line, `"redacted":{"card_number":1,"email":2}`) || !strings.Contains(line, hex.EncodeToString(sum[:])) {
		t.Errorf("audit line %s; want the counts masked and the client's body's hash", line)
	}
	for _, v := range []string{"ana@example.com", "bo@example.org", "4111"} {
		if strings.Contains(line, v) {
			t.Errorf("the audit line holds %s: %s", v, line)
		}
	}
}
