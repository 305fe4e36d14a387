package console

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/filters"
)

// TestSignIn: the admin key opens a session whose cookie script cannot
// read and no other site sends; a wrong key is refused and audited, and
// neither the key nor the cookie ever reaches the trail or a page.
func TestSignIn(t *testing.T) {
	tests := []struct {
		name       string
		key        string
		https      bool
		wantStatus int
		wantCookie string // prefix of the Set-Cookie value; "" for none
		wantFlags  []string
		wantAudit  string
	}{
		{name: "wrong key", key: "sk-guess", wantStatus: 401, wantAudit: "refused"},
		{name: "no key", key: "", wantStatus: 401, wantAudit: "refused"},
		{name: "admin key over http", key: adminKey, wantStatus: 303, wantCookie: "switchyard_console=",
			wantFlags: []string{"Path=/console", "HttpOnly", "SameSite=Strict"}, wantAudit: "console.sign_in"},
		{name: "admin key over TLS", key: adminKey, https: true, wantStatus: 303, wantCookie: "__Secure-switchyard_console=",
			wantFlags: []string{"Path=/console", "HttpOnly", "SameSite=Strict", "Secure"}, wantAudit: "console.sign_in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			var h filters.Headers
			if tt.https {
				h = filters.Headers{{Key: "x-forwarded-proto", Value: "https"}}
			}
			a := r.do("POST", "/console/login", h, url.Values{"key": {tt.key}, "next": {"/console/requests"}}.Encode())
			if a.status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", a.status, tt.wantStatus, a.body)
			}
			c := a.header.Get("set-cookie")
			switch {
			case tt.wantCookie == "" && c != "":
				t.Errorf("a refused sign-in set a cookie: %s", c)
			case tt.wantCookie != "" && !strings.HasPrefix(c, tt.wantCookie):
				t.Errorf("cookie %q, want %s...", c, tt.wantCookie)
			}
			for _, f := range tt.wantFlags {
				if !strings.Contains(c, "; "+f) {
					t.Errorf("cookie %q lacks %s", c, f)
				}
			}
			if !tt.https && strings.Contains(c, "Secure") {
				t.Errorf("a cookie over http is Secure, and the browser would drop it: %s", c)
			}
			if tt.wantStatus == 303 && a.header.Get("location") != "/console/requests" {
				t.Errorf("location %q, want where the browser was going", a.header.Get("location"))
			}
			ev := r.lastEvent(tt.wantAudit)
			if ev["via"] != "console" || ev["client"] != "127.0.0.1" {
				t.Errorf("audit event %v", ev)
			}
			if tt.wantStatus == 303 && (ev["actor"] != "admin" || ev["session"] == "") {
				t.Errorf("sign-in event %v, want the admin and the session's reference", ev)
			}
			id := strings.TrimPrefix(strings.Split(c, ";")[0], tt.wantCookie)
			for _, secret := range []string{adminKey, tt.key, id} {
				if secret != "" && strings.Contains(r.trail.String(), secret) {
					t.Errorf("the audit trail holds %q:\n%s", secret, r.trail.String())
				}
			}
			if strings.Contains(a.body, adminKey) {
				t.Error("the answer holds the admin key")
			}
		})
	}
}

func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"":                           "/console/overview",
		"/console/tenants":           "/console/tenants",
		"/console/requests?tenant=a": "/console/requests?tenant=a",
		"https://evil.example/":      "/console/overview",
		"//evil.example/console/":    "/console/overview",
		"/console//evil.example":     "/console/overview",
		"/console/login":             "/console/overview",
		"/v1/models":                 "/console/overview",
		"/console/\\evil":            "/console/overview",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// TestSessionsEnd: a session ends after its idle timeout (background
// refreshes do not keep it alive), after its maximum age, at logout, and
// when the policy's admin key changes; a page without one sends the
// browser to sign in, an htmx refresh through HX-Redirect.
func TestSessionsEnd(t *testing.T) {
	signedIn := func(r *rig, cookie filters.Header, htmx bool) bool {
		t.Helper()
		h := filters.Headers{cookie}
		if htmx {
			h = append(h, filters.Header{Key: "hx-request", Value: "true"})
		}
		a := r.do("GET", "/console/providers", h, "")
		switch {
		case a.status == 200 && a.header.Get("hx-redirect") == "":
			return true
		case htmx && a.header.Get("hx-redirect") == "/console/login?next=%2Fconsole%2Fproviders":
			return false
		case !htmx && a.status == 303 && a.header.Get("location") == "/console/login?next=%2Fconsole%2Fproviders":
			return false
		}
		t.Fatalf("neither a page nor a way to sign in: %d %v", a.status, a.header)
		return false
	}
	t.Run("idle", func(t *testing.T) {
		r := newRig(t)
		cookie, _ := r.signIn()
		r.now = r.now.Add(idleTimeout - time.Minute)
		if !signedIn(r, cookie, false) {
			t.Fatal("signed out before the idle timeout")
		}
		r.now = r.now.Add(idleTimeout - time.Minute)
		if !signedIn(r, cookie, true) {
			t.Fatal("a page the operator asked for did not keep the session")
		}
		r.now = r.now.Add(2 * time.Minute)
		if signedIn(r, cookie, true) {
			t.Fatal("background refreshes kept an idle session alive")
		}
	})
	t.Run("maximum age", func(t *testing.T) {
		r := newRig(t)
		cookie, _ := r.signIn()
		for end := r.now.Add(maxAge); r.now.Before(end.Add(-idleTimeout)); r.now = r.now.Add(idleTimeout / 2) {
			if !signedIn(r, cookie, false) {
				t.Fatal("signed out while active")
			}
		}
		r.now = r.now.Add(idleTimeout)
		if signedIn(r, cookie, false) {
			t.Fatal("a session outlived its maximum age")
		}
	})
	t.Run("logout", func(t *testing.T) {
		r := newRig(t)
		cookie, csrf := r.signIn()
		a := r.post(cookie, "/console/logout", url.Values{"csrf": {csrf}})
		if a.status != 303 || a.header.Get("location") != "/console/login" || !strings.Contains(a.header.Get("set-cookie"), "Max-Age=0") {
			t.Fatalf("logout: %d %v", a.status, a.header)
		}
		if signedIn(r, cookie, false) {
			t.Fatal("the session outlived its logout")
		}
		r.lastEvent("console.sign_out")
	})
	t.Run("admin key rotated", func(t *testing.T) {
		r := newRig(t)
		cookie, _ := r.signIn()
		r.p.Gateway.AdminKeyHash[0] ^= 1
		if signedIn(r, cookie, false) {
			t.Fatal("a session outlived the admin key it signed in with")
		}
	})
	t.Run("a made-up cookie", func(t *testing.T) {
		r := newRig(t)
		if signedIn(r, filters.Header{Key: "cookie", Value: "other=1; switchyard_console=made-up"}, false) {
			t.Fatal("a made-up session ID was taken")
		}
	})
}

// TestSignInThrottled: past ten wrong keys a minute from an address, the
// sign-in page refuses it, the admin key included, and says when to
// come back.
func TestSignInThrottled(t *testing.T) {
	r := newRig(t)
	for range 10 {
		r.do("POST", "/console/login", nil, url.Values{"key": {"sk-guess"}}.Encode())
	}
	a := r.do("POST", "/console/login", nil, url.Values{"key": {adminKey}}.Encode())
	if a.status != 429 || a.header.Get("retry-after") != "60" || a.header.Get("set-cookie") != "" {
		t.Fatalf("after ten wrong keys: %d %v", a.status, a.header)
	}
}
