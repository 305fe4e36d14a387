package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRedaction: a tenant's redaction masks the sensitive data of its
// requests on every route before any provider sees it (a chat completion
// translated for OpenAI, a Messages request passed through to Anthropic,
// whose other members go on byte for byte) and, as it asks, restores the
// values in the answer, whole or streamed; a route's redaction without
// restore leaves the placeholders in the answer; a request neither
// redacts reaches its provider as sent. The audit line counts what was
// masked, and no log holds a masked value.
func TestRedaction(t *testing.T) {
	s := options(t)
	const (
		email = "ana@example.com"
		card  = "4111 1111 1111 1111"
	)
	tests := []struct {
		name, path, key, provider, body string
		// wantUpstream is in what the provider got, wantGone not.
		wantUpstream, wantGone []string
		// wantAnswer is in the client's answer, wantNotInAnswer not.
		wantAnswer, wantNotInAnswer string
	}{
		{name: "a tenant's, on chat completions, restored", path: "/v1/chat/completions", key: privateKey, provider: "openai",
			body:         `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"mail ` + email + ` now"}]}`,
			wantUpstream: []string{`mail [email_1] now`}, wantGone: []string{email},
			wantAnswer: email, wantNotInAnswer: "[email_1]"},
		{name: "a tenant's, on Messages passed through, streamed and restored", path: "/v1/messages", key: privateKey, provider: "anthropic",
			body: `{"model":"claude-3-5-haiku","max_tokens":50,"stream":true,"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]},` +
				`"system":"card ` + card + `","messages":[{"role":"user","content":"mail ` + email + ` now"}]}`,
			wantUpstream: []string{`"system":"card [card_number_1]"`, `"content":"mail [email_1] now"`, `"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]}`},
			wantGone:     []string{email, card},
			wantAnswer:   email, wantNotInAnswer: "[email_1]"},
		{name: "a route's, on Responses, not restored", path: "/v1/responses", key: demoKey, provider: "openai",
			body:         `{"model":"gpt-4o-mini","input":"mail ` + email + ` now"}`,
			wantUpstream: []string{`"input":"mail [email_1] now"`}, wantGone: []string{email},
			wantAnswer: "[email_1]", wantNotInAnswer: email},
		{name: "neither: as sent", path: "/v1/chat/completions", key: demoKey, provider: "openai",
			body:         `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"mail control@example.net now"}]}`,
			wantUpstream: []string{"control@example.net"},
			wantAnswer:   "control@example.net", wantNotInAnswer: "[email_1]"},
	}
	ids := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := postTo(t, s, tt.path, tt.key, tt.body)
			if a.status != http.StatusOK {
				t.Fatalf("answer %d %s", a.status, a.body)
			}
			ids[tt.name] = a.header.Get("X-Request-Id")
			st, err := s.Sim.Stats(tt.provider)
			if err != nil || len(st.Recent) == 0 {
				t.Fatalf("%s's requests: %v", tt.provider, err)
			}
			up := st.Recent[len(st.Recent)-1].Body
			for _, w := range tt.wantUpstream {
				if !strings.Contains(up, w) {
					t.Errorf("%s got %s\nwant it to hold %s", tt.provider, up, w)
				}
			}
			for _, g := range tt.wantGone {
				if strings.Contains(up, g) {
					t.Errorf("%s got %s, which holds %s", tt.provider, up, g)
				}
			}
			if !strings.Contains(string(a.body), tt.wantAnswer) || strings.Contains(string(a.body), tt.wantNotInAnswer) {
				t.Errorf("answer %s; want %q in it and %q not", a.body, tt.wantAnswer, tt.wantNotInAnswer)
			}
		})
	}

	t.Run("the audit counts what was masked", func(t *testing.T) {
		want := map[string]map[string]any{
			ids["a tenant's, on chat completions, restored"]:                     {"email": float64(1)},
			ids["a tenant's, on Messages passed through, streamed and restored"]: {"email": float64(1), "card_number": float64(1)},
		}
		err := eventually(10*time.Second, func() error {
			got := 0
			for _, l := range logLines(s, "extproc-0", func(m map[string]any) bool {
				return m["kind"] == "audit" && m["msg"] == "request" && want[str(m["request_id"])] != nil
			}) {
				red, _ := l["redacted"].(map[string]any)
				if b1, b2 := jsonOf(red), jsonOf(want[str(l["request_id"])]); b1 != b2 {
					t.Errorf("audit of %s: redacted %s, want %s", l["request_id"], b1, b2)
				}
				got++
			}
			if got < len(want) {
				return errNotYet
			}
			return nil
		})
		if err != nil {
			t.Fatalf("audit lines of the redacted requests: %v", err)
		}
	})

	t.Run("no log holds a masked value", func(t *testing.T) {
		logs, _ := filepath.Glob(filepath.Join(s.Dir, "*.log"))
		for _, name := range logs {
			b, _ := os.ReadFile(name)
			for _, v := range []string{email, card} {
				if strings.Contains(string(b), v) {
					t.Errorf("%s holds %s", filepath.Base(name), v)
				}
			}
		}
	})
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
