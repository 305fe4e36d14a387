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

// TestRefusedAttemptsAreAudited: a wrong or missing admin key is refused
// and recorded, without the token presented.
func TestRefusedAttemptsAreAudited(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(usagePolicy + `
providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:1"}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range []string{"Bearer sk-guess-1234", ""} {
		var trail bytes.Buffer
		fl, err := New(policy.FilterRef{Name: "admin"}, filters.Deps{Policy: p, Audit: audit.New(&trail, "extproc")})
		if err != nil {
			t.Fatal(err)
		}
		x := &filters.Exchange{ID: "r10", Policy: p, Route: p.Routes[0], Method: "GET", Path: "/admin/keys",
			Header: filters.Headers{{Key: "authorization", Value: auth}}}
		if err := fl.(*Filter).RequestHeaders(context.Background(), x); err == nil {
			t.Fatalf("%q: admitted", auth)
		}
		var ev map[string]any
		if err := json.Unmarshal(trail.Bytes(), &ev); err != nil {
			t.Fatalf("%q: trail %q: %v", auth, trail.String(), err)
		}
		if ev["action"] != "refused" || ev["actor"] != "unauthenticated" || ev["request_id"] != "r10" {
			t.Errorf("%q: event %v", auth, ev)
		}
		if bytes.Contains(trail.Bytes(), []byte("sk-guess")) {
			t.Errorf("the trail holds the presented token: %s", trail.String())
		}
	}
}
