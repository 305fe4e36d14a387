package console

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/switchyard/switchyard/filters"
)

// TestChangesNeedCSRF: every change needs the session's CSRF token and a
// request from the console's own origin; a refusal changes nothing and is
// audited.
func TestChangesNeedCSRF(t *testing.T) {
	r := newRig(t)
	cookie, csrf := r.signIn()
	// A real second session's token: a token edited by hand could, by
	// chance, equal the first one.
	_, otherCSRF := r.signIn()
	if otherCSRF == csrf {
		t.Fatal("two sessions share a CSRF token")
	}
	drill := func(token string) url.Values {
		return url.Values{"csrf": {token}, "provider": {"openai"}, "state": {"down"}}
	}
	tests := []struct {
		name       string
		header     filters.Headers
		form       url.Values
		wantStatus int
	}{
		{"no token", filters.Headers{cookie}, drill(""), 403},
		{"another session's token", filters.Headers{cookie}, drill(otherCSRF), 403},
		{"from another site", filters.Headers{cookie, {Key: "origin", Value: "https://evil.example"}}, drill(csrf), 403},
		{"cross-site fetch", filters.Headers{cookie, {Key: "sec-fetch-site", Value: "cross-site"}}, drill(csrf), 403},
		{"not a form", filters.Headers{cookie, {Key: "content-type", Value: "application/json"}}, drill(csrf), 415},
		{"without a session", nil, drill(csrf), 303},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := r.do("POST", "/console/providers/drill", tt.header, tt.form.Encode())
			if a.status != tt.wantStatus {
				t.Fatalf("status %d, want %d", a.status, tt.wantStatus)
			}
			if r.mon.Snapshot()[1].Drill {
				t.Fatal("a refused change was made")
			}
		})
	}
	if ev := r.lastEvent("refused"); ev["reason"] != "csrf" || ev["actor"] != "admin" {
		t.Errorf("refusal event %v", ev)
	}
	if a := r.post(cookie, "/console/providers/drill", drill(csrf)); a.status != 200 || !r.mon.Snapshot()[1].Drill {
		t.Fatalf("with the token: %d, drill %v", a.status, r.mon.Snapshot()[1].Drill)
	}
}

// TestContentSecurityPolicy: every answer, pages, refusals and static
// files alike, carries a policy that allows no inline script or style
// and no other origin, and no page holds inline script, inline style or
// event handler attributes the policy would have to allow.
func TestContentSecurityPolicy(t *testing.T) {
	r := newRig(t)
	cookie, _ := r.signIn()
	targets := []struct {
		path   string
		header filters.Headers
	}{
		{"/console/login", nil},
		{"/console/overview", nil}, // signed out: a redirect
		{"/console/nowhere", filters.Headers{cookie}},
		{"/console/static/" + assets()["console.js"].hash + "/console.js", nil},
	}
	for _, tab := range tabs {
		targets = append(targets, struct {
			path   string
			header filters.Headers
		}{"/console/" + tab.Path, filters.Headers{cookie}})
	}
	for _, tt := range targets {
		a := r.do("GET", tt.path, tt.header, "")
		csp := a.header.Get("content-security-policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: policy %q lacks %s", tt.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: policy %q allows something unsafe", tt.path, csp)
		}
		if a.header.Get("x-content-type-options") != "nosniff" {
			t.Errorf("%s: no nosniff", tt.path)
		}
		if strings.HasPrefix(a.header.Get("content-type"), "text/html") {
			for _, bad := range inlineCode(t, a.body) {
				t.Errorf("%s: %s", tt.path, bad)
			}
			if a.header.Get("cache-control") != "no-store" {
				t.Errorf("%s: a page may be cached: %q", tt.path, a.header.Get("cache-control"))
			}
		}
	}
}

// inlineCode lists what in page a policy without 'unsafe-inline' would
// block: script elements without src, style elements, style attributes
// and event handler attributes.
func inlineCode(t *testing.T, page string) []string {
	t.Helper()
	var bad []string
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return bad
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			src := false
			for _, a := range tok.Attr {
				switch {
				case a.Key == "src":
					src = true
				case a.Key == "style":
					bad = append(bad, "a style attribute on <"+tok.Data+">")
				case strings.HasPrefix(a.Key, "on"):
					bad = append(bad, "an event handler "+a.Key+" on <"+tok.Data+">")
				case strings.HasPrefix(a.Key, "hx-on"):
					bad = append(bad, "an htmx handler "+a.Key+" on <"+tok.Data+">")
				}
			}
			switch {
			case tok.Data == "script" && !src:
				bad = append(bad, "an inline <script>")
			case tok.Data == "style":
				bad = append(bad, "a <style> element")
			}
		}
	}
}

// TestStatic: a file named by its content's hash may be kept for good; a
// stale name is served but revalidated; nothing else is served.
func TestStatic(t *testing.T) {
	r := newRig(t)
	js := assets()["vendor/htmx.min.js"]
	tests := []struct {
		path       string
		wantStatus int
		wantCache  string
		wantType   string
	}{
		{"/console/static/" + js.hash + "/vendor/htmx.min.js", 200, "public, max-age=31536000, immutable", "text/javascript"},
		{"/console/static/0000/vendor/htmx.min.js", 200, "no-cache", "text/javascript"},
		{"/console/static/" + assets()["console.css"].hash + "/console.css", 200, "public, max-age=31536000, immutable", "text/css"},
		{"/console/static/x/vendor/htmx.LICENSE.txt", 404, "", ""},
		{"/console/static/x/../../etc/passwd", 404, "", ""},
	}
	for _, tt := range tests {
		a := r.do("GET", tt.path, nil, "")
		if a.status != tt.wantStatus || a.header.Get("cache-control") != tt.wantCache || !strings.HasPrefix(a.header.Get("content-type"), tt.wantType) {
			t.Errorf("%s: %d %q %q", tt.path, a.status, a.header.Get("cache-control"), a.header.Get("content-type"))
		}
	}
}

// TestMethods: the console answers GET and POST; anything else is a 405
// that says what is allowed, and changes nothing.
func TestMethods(t *testing.T) {
	r := newRig(t)
	cookie, _ := r.signIn()
	for _, m := range []string{"PUT", "DELETE", "PATCH"} {
		a := r.do(m, "/console/providers/drill", filters.Headers{cookie}, "provider=openai&state=down")
		if a.status != 405 || a.header.Get("allow") != "GET, POST" {
			t.Errorf("%s: %d, allow %q", m, a.status, a.header.Get("allow"))
		}
	}
	if r.mon.Snapshot()[1].Drill {
		t.Error("a refused method changed something")
	}
}
