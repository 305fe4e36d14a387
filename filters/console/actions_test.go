package console

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/state/store"
)

var secretRE = regexp.MustCompile(`sk-sy-[A-Za-z0-9]+`)

// TestKeyShownOnce issues, rotates and revokes a key from the console: the
// secret is in the answer that made it and nowhere after, neither in the
// next page nor in the audit trail, which names who did what.
func TestKeyShownOnce(t *testing.T) {
	r := newRig(t)
	cookie, csrf := r.signIn()
	ctx := context.Background()

	a := r.post(cookie, "/console/keys/issue", url.Values{"csrf": {csrf}, "tenant": {"acme"}, "name": {"ci"}, "app": {"batch"}})
	secret := secretRE.FindString(a.body)
	if a.status != 200 || secret == "" || !strings.Contains(a.body, `id="issued"`) {
		t.Fatalf("issue: %d, secret %q:\n%s", a.status, secret, a.body)
	}
	rec, err := r.st.Key(ctx, store.HashKey(secret))
	if err != nil || rec.Tenant != "acme" || rec.App != "batch" || rec.Name != "ci" {
		t.Fatalf("the key ring holds %+v, %v", rec, err)
	}
	ev := r.lastEvent("key.issue")
	if ev["actor"] != "admin" || ev["via"] != "console" || ev["session"] == "" || ev["tenant"] != "acme" || ev["name"] != "ci" || ev["hash_prefix"] != rec.Hash[:8] {
		t.Errorf("issue event %v", ev)
	}

	page := r.do("GET", "/console/tenants", withCookie(cookie), "")
	if strings.Contains(page.body, secret) || secretRE.MatchString(page.body) {
		t.Error("the tenants page shows the secret again")
	}
	if !strings.Contains(page.body, rec.Hash[:8]+"…") || !strings.Contains(page.body, `data-key="ci" data-state="live"`) {
		t.Error("the tenants page does not list the key by name and hash prefix")
	}

	a = r.post(cookie, "/console/keys/rotate", url.Values{"csrf": {csrf}, "tenant": {"acme"}, "name": {"ci"}})
	rotated := secretRE.FindString(a.body)
	if a.status != 200 || rotated == "" || rotated == secret {
		t.Fatalf("rotate: %d, secret %q", a.status, rotated)
	}
	if old, err := r.st.Key(ctx, store.HashKey(secret)); err != nil || !old.Revoked {
		t.Errorf("the old secret after rotation: %+v, %v", old, err)
	}
	r.lastEvent("key.rotate")

	a = r.post(cookie, "/console/keys/revoke", url.Values{"csrf": {csrf}, "tenant": {"acme"}, "name": {"ci"}})
	if a.status != 200 || secretRE.MatchString(a.body) || !strings.Contains(a.body, "revoked") {
		t.Fatalf("revoke: %d", a.status)
	}
	if cur, err := r.st.Key(ctx, store.HashKey(rotated)); err != nil || !cur.Revoked {
		t.Errorf("the rotated secret after revocation: %+v, %v", cur, err)
	}
	r.lastEvent("key.revoke")
	for _, s := range []string{secret, rotated, adminKey} {
		if strings.Contains(r.trail.String(), s) {
			t.Errorf("the audit trail holds a secret:\n%s", r.trail.String())
		}
	}
}

// TestKeyRefusals: the console refuses what the admin API refuses, with
// the same reason, and changes nothing.
func TestKeyRefusals(t *testing.T) {
	tests := []struct {
		name       string
		path       string
		form       url.Values
		wantStatus int
		wantText   string
	}{
		{"a policy key", "/console/keys/revoke", url.Values{"tenant": {"acme"}, "name": {"yaml-key"}}, 409, "defined in the policy"},
		{"a name taken by the policy", "/console/keys/issue", url.Values{"tenant": {"acme"}, "name": {"yaml-key"}}, 409, "already has a key"},
		{"a bad name", "/console/keys/issue", url.Values{"tenant": {"acme"}, "name": {"a b"}}, 400, "name must be"},
		{"an unknown app", "/console/keys/issue", url.Values{"tenant": {"acme"}, "name": {"k"}, "app": {"mobile"}}, 400, "has no app"},
		{"an unknown tenant", "/console/keys/issue", url.Values{"tenant": {"nobody"}, "name": {"k"}}, 404, "no tenant"},
		{"an unknown provider", "/console/providers/drill", url.Values{"provider": {"nobody"}, "state": {"down"}}, 404, "no provider"},
		{"a drill sideways", "/console/providers/drill", url.Values{"provider": {"openai"}, "state": {"sideways"}}, 400, "down or up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			cookie, csrf := r.signIn()
			tt.form.Set("csrf", csrf)
			a := r.post(cookie, tt.path, tt.form)
			if a.status != tt.wantStatus || !strings.Contains(a.body, tt.wantText) || secretRE.MatchString(a.body) {
				t.Errorf("%d, want %d with %q:\n%s", a.status, tt.wantStatus, tt.wantText, a.body)
			}
			for _, ev := range r.events() {
				if a, _ := ev["action"].(string); strings.HasPrefix(a, "key.") || strings.HasPrefix(a, "fault.") {
					t.Errorf("a refused change was audited as made: %v", ev)
				}
			}
		})
	}
}

// TestDrill brings a provider down and up from the console: the monitor
// holds it down meanwhile, the page says so, and both are audited.
func TestDrill(t *testing.T) {
	r := newRig(t)
	cookie, csrf := r.signIn()
	a := r.post(cookie, "/console/providers/drill", url.Values{"csrf": {csrf}, "provider": {"openai"}, "state": {"down"}})
	if a.status != 200 || !strings.Contains(a.body, `data-provider="openai" data-state="unavailable" data-drill="true"`) {
		t.Fatalf("down: %d:\n%s", a.status, a.body)
	}
	if ds, _ := r.st.Drills(context.Background()); len(ds) != 1 || ds[0] != "openai" {
		t.Errorf("the drill was not shared: %v", ds)
	}
	if ev := r.lastEvent("fault.down"); ev["provider"] != "openai" || ev["via"] != "console" {
		t.Errorf("down event %v", ev)
	}
	a = r.post(cookie, "/console/providers/drill", url.Values{"csrf": {csrf}, "provider": {"openai"}, "state": {"up"}})
	if a.status != 200 || !strings.Contains(a.body, `data-provider="openai" data-state="healthy" data-drill="false"`) {
		t.Fatalf("up: %d", a.status)
	}
	r.lastEvent("fault.up")
}
