package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/manage"
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

// TestFailedKeysAreThrottled: past ten failed admin keys a minute from
// one address, that address is refused 429 before its key is read, even
// the right key, with one audit line for the throttling rather than one
// a guess; another address is not held, and the next minute frees it.
func TestFailedKeysAreThrottled(t *testing.T) {
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
	f := fl.(*Filter)
	now := time.Unix(1_800_000_000, 0)
	f.gate = manage.NewGate(func() time.Time { return now })
	try := func(addr, key string) int {
		x := &filters.Exchange{ID: "r", Policy: p, Route: p.Routes[0], Method: "GET", Path: "/admin/providers",
			Header: filters.Headers{{Key: "authorization", Value: "Bearer " + key}, {Key: "x-envoy-external-address", Value: addr}}}
		if err := f.RequestHeaders(context.Background(), x); err != nil {
			return filters.AsError(err, "r").Status
		}
		return http.StatusOK
	}
	for i := range 10 {
		if got := try("10.0.0.1", "sk-guess"); got != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i, got)
		}
	}
	for range 5 {
		if got := try("10.0.0.1", "sk-local-admin"); got != http.StatusTooManyRequests {
			t.Fatalf("after ten failures: %d, want 429 even with the right key", got)
		}
	}
	if lines := bytes.Count(trail.Bytes(), []byte("\n")); lines != 11 {
		t.Errorf("%d audit lines, want ten refusals and one throttling", lines)
	}
	if got := try("10.0.0.2", "sk-local-admin"); got != http.StatusOK {
		t.Errorf("another address: %d, want 200", got)
	}
	now = now.Add(time.Minute)
	if got := try("10.0.0.1", "sk-local-admin"); got != http.StatusOK {
		t.Errorf("a minute later: %d, want 200", got)
	}
}
