package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// TestActionsAreAudited: an admin action lands in the audit trail with who
// did it and to what.
func TestActionsAreAudited(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(usagePolicy + `
providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:1"}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	var trail bytes.Buffer
	fl, err := New(policy.FilterRef{Name: "admin"}, filters.Deps{Policy: p, Audit: audit.New(&trail, "extproc")})
	if err != nil {
		t.Fatal(err)
	}
	x := &filters.Exchange{ID: "r9", Policy: p, Route: p.Routes[0], Method: "POST", Path: "/admin/fault/down", Body: []byte(`{"provider":"openai"}`)}
	if err := fl.(*Filter).RequestBody(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(trail.Bytes(), &ev); err != nil {
		t.Fatalf("trail %q: %v", trail.String(), err)
	}
	for k, want := range map[string]any{"kind": "audit", "msg": "admin", "request_id": "r9", "actor": "admin", "action": "fault.down", "provider": "openai"} {
		if ev[k] != want {
			t.Errorf("%s = %v, want %v (event %v)", k, ev[k], want, ev)
		}
	}
}
