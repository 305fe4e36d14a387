package filters

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

// redactPolicy redacts on two routes (every kind, and e-mail only with
// the answers restored), not on a third, and for one tenant everywhere.
const redactPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
models:
  - {name: m, provider: oa, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 1}}
  - {name: e, provider: oa, context_window: 8000, capabilities: [embeddings], price_usd_per_mtok: {input: 1, output: 0}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, redact: {}}
  - {name: messages, path: /v1/messages, api: messages, redact: {kinds: [email], restore: true}}
  - {name: responses, path: /v1/responses, api: responses, redact: {}}
  - {name: embeddings, path: /v1/embeddings, api: embeddings, redact: {}}
  - {name: plain, path: /v2/chat/completions, api: chat_completions}
tenants:
  - {name: acme}
  - {name: careful, redact: {kinds: [phone]}}
`

// redacted runs the body side of the chain and the redaction on route
// for a caller of tenant.
func redacted(t *testing.T, route, tenant, body string) *Exchange {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(redactPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	x := &Exchange{ID: "r", Policy: p, Body: []byte(body)}
	for _, r := range p.Routes {
		if r.Name == route {
			x.Route = r
		}
	}
	for _, tn := range p.Tenants {
		if tn.Name == tenant {
			x.Caller.Tenant = tn
		}
	}
	if err := NewChain(nil).RequestBody(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if err := x.RedactBody(context.Background()); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestRedactBody: the text members of each API's request are masked, and
// nothing else of the body changes; the request is read again from the
// masked body; the client's body stays what the audit trail hashes.
func TestRedactBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, route, tenant, body, want string
		wantCounts                      map[string]int
	}{
		{"chat: content, parts and tool-call arguments; user and metadata untouched", "chat", "acme",
			`{"model":"m","user":"ana@example.com","metadata":{"k":"ana@example.com"},"messages":[` +
				`{"role":"system","content":"key sk-FAKEfakefakefakefake"},` +
				`{"role":"user","content":[{"type":"text","text":"mail ana@example.com"},{"type":"image_url","image_url":{"url":"https://x/ana@example.com.png"}}]},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"send","arguments":"{\"to\":\"ana@example.com\"}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"sent to +351 912 345 678"}]}`,
			`{"model":"m","user":"ana@example.com","metadata":{"k":"ana@example.com"},"messages":[` +
				`{"role":"system","content":"key [secret_1]"},` +
				`{"role":"user","content":[{"type":"text","text":"mail [email_1]"},{"type":"image_url","image_url":{"url":"https://x/ana@example.com.png"}}]},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"send","arguments":"{\"to\":\"[email_1]\"}"}}]},` +
				`{"role":"tool","tool_call_id":"c1","content":"sent to [phone_1]"}]}`,
			map[string]int{"secret": 1, "email": 2, "phone": 1}},
		{"Messages: system, text, tool results and tool input; thinking untouched; e-mail only", "messages", "acme",
			`{"model":"m","max_tokens":9,"system":[{"type":"text","text":"for ana@example.com"}],"messages":[` +
				`{"role":"user","content":"call +351 912 345 678 or ana@example.com"},` +
				`{"role":"assistant","content":[{"type":"thinking","thinking":"ana@example.com again","signature":"sig"},{"type":"tool_use","id":"t","name":"mail","input":{"to":{"addr":"ana@example.com"}}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"bo@example.org replied"}]}]}]}`,
			`{"model":"m","max_tokens":9,"system":[{"type":"text","text":"for [email_1]"}],"messages":[` +
				`{"role":"user","content":"call +351 912 345 678 or [email_1]"},` +
				`{"role":"assistant","content":[{"type":"thinking","thinking":"ana@example.com again","signature":"sig"},{"type":"tool_use","id":"t","name":"mail","input":{"to":{"addr":"[email_1]"}}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"[email_2] replied"}]}]}]}`,
			map[string]int{"email": 4}},
		{"Responses: instructions and input items", "responses", "acme",
			`{"model":"m","instructions":"help ana@example.com","input":[{"role":"user","content":[{"type":"input_text","text":"my card 4111 1111 1111 1111"}]},` +
				`{"type":"function_call_output","call_id":"c","output":"ok for ana@example.com"}]}`,
			`{"model":"m","instructions":"help [email_1]","input":[{"role":"user","content":[{"type":"input_text","text":"my card [card_number_1]"}]},` +
				`{"type":"function_call_output","call_id":"c","output":"ok for [email_1]"}]}`,
			map[string]int{"email": 2, "card_number": 1}},
		{"embeddings: each input", "embeddings", "acme",
			`{"model":"e","input":["ana@example.com","plain"]}`, `{"model":"e","input":["[email_1]","plain"]}`, map[string]int{"email": 1}},
		{"a tenant's setting in place of the route's", "chat", "careful",
			`{"model":"m","messages":[{"role":"user","content":"ana@example.com, +351 912 345 678"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"ana@example.com, [phone_1]"}]}`, map[string]int{"phone": 1}},
		{"a tenant's setting on a route without one", "plain", "careful",
			`{"model":"m","messages":[{"role":"user","content":"+351 912 345 678"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"[phone_1]"}]}`, map[string]int{"phone": 1}},
		{"nothing sensitive: the body as it came", "chat", "acme",
			`{"model":"m", "messages":[{"role":"user","content":"hi"}]}`, `{"model":"m", "messages":[{"role":"user","content":"hi"}]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := redacted(t, tt.route, tt.tenant, tt.body)
			if string(x.Body) != tt.want {
				t.Errorf("body\n got %s\nwant %s", x.Body, tt.want)
			}
			if string(x.ClientBody()) != tt.body {
				t.Errorf("the client's body changed: %s", x.ClientBody())
			}
			if x.Redaction == nil || !maps.Equal(x.Redaction.Masker.Counts(), tt.wantCounts) {
				t.Errorf("redaction %+v, want counts %v", x.Redaction, tt.wantCounts)
			}
			// The request the filters and translators read is the masked
			// body's.
			var text string
			switch {
			case x.Chat != nil:
				b, _ := json.Marshal(x.Chat)
				text = string(b)
			case x.Embeddings != nil:
				text = strings.Join(x.Embeddings.Input.Texts, " ")
			}
			for _, p := range []string{"[email_1]", "[phone_1]", "[secret_1]", "[card_number_1]"} {
				if strings.Contains(string(x.Body), p) != strings.Contains(text, p) {
					t.Errorf("the body holds %s: %v, the request read again: %v (%s)", p, strings.Contains(string(x.Body), p), strings.Contains(text, p), text)
				}
			}
		})
	}
	if x := redacted(t, "plain", "acme", `{"model":"m","messages":[{"role":"user","content":"ana@example.com"}]}`); x.Redaction != nil || x.ClientBody() == nil {
		t.Errorf("a route and tenant without redaction: %+v", x.Redaction)
	}
}
