package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/stack"
)

const spyKey = "sk-test-spy"

// TestAuditTrail: requests, admin actions and policy loads and reloads of
// both processes are in the audit trail; a prompt is there only for a
// tenant that captures prompts, and then masked.
func TestAuditTrail(t *testing.T) {
	s := startStack(t, stack.Options{Overlay: map[string]string{"spy.yaml": `tenants:
  - name: spy
    audit: {capture_prompts: true}
    keys: [{name: spy-key, sha256: ` + sha(spyKey) + `}]
`}})
	audit := func(process string, keep func(map[string]any) bool) []map[string]any {
		return logLines(s, process, func(m map[string]any) bool { return m["kind"] == "audit" && keep(m) })
	}
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"mail ana@example.com, key sk-FAKEfakefakefakefake"}]}`
	_, spied, _ := post(t, s, spyKey, body)
	_, plain, _ := post(t, s, demoKey, body)
	if code, b := admin(t, s, http.MethodPost, "/admin/fault/down", `{"provider":"gemini"}`); code != http.StatusOK {
		t.Fatalf("drill: %d %s", code, b)
	}
	models, err := s.ReadPolicyFile("models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WritePolicyFile("models.yaml", append(models, "\n# an edit\n"...)); err != nil {
		t.Fatal(err)
	}

	var requests map[string]map[string]any
	err = eventually(15*time.Second, func() error {
		requests = map[string]map[string]any{}
		for _, e := range audit("extproc-0", func(m map[string]any) bool { return m["msg"] == "request" }) {
			requests[e["request_id"].(string)] = e
		}
		for _, p := range []string{"extproc-0", "xds"} {
			if len(audit(p, func(m map[string]any) bool { return m["msg"] == "config" && m["result"] == "applied" })) < 2 {
				return errNotYet
			}
		}
		if requests[spied] == nil || requests[plain] == nil {
			return errNotYet
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the trail lacks the requests or the reload:\n%s", tail(s.Log("extproc-0")))
	}
	if p, _ := requests[spied]["prompt"].(string); p != "user: mail [email], key [secret]" {
		t.Errorf("captured prompt %q, want it masked", p)
	}
	if _, ok := requests[plain]["prompt"]; ok {
		t.Errorf("demo does not capture prompts, yet its request's event is %v", requests[plain])
	}
	for id, e := range map[string]map[string]any{spied: requests[spied], plain: requests[plain]} {
		if e["prompt_sha256"] != sha(body) || e["routing_reason"] == "" || e["status"] != 200.0 || e["served_model"] != "gpt-4o-mini" {
			t.Errorf("request %s: event %v", id, e)
		}
	}
	if got := audit("extproc-0", func(m map[string]any) bool { return m["msg"] == "admin" && m["action"] == "fault.down" }); len(got) != 1 || got[0]["provider"] != "gemini" {
		t.Errorf("fault drill events: %v", got)
	}
	for _, p := range []string{"extproc-0", "xds", "envoy-0"} {
		if strings.Contains(s.Log(p), "ana@example.com") || strings.Contains(s.Log(p), "sk-FAKEfakefakefakefake") {
			t.Errorf("%s's log holds the prompt's personal data or secret", p)
		}
	}
}
