package usage

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openai"
	"github.com/switchyard/switchyard/filters"
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

func TestAuditEventOfEmbeddings(t *testing.T) {
	p := testPolicyCompiled(t)
	body := `{"model":"e","input":["call +351 912 345 678","plain"]}`
	req, err := openai.ParseEmbeddingsRequest([]byte(body))
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
