package console

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/manage"
)

// loginView is the sign-in page's.
type loginView struct {
	Next string
}

func (f *Filter) loginPage(c *call, status int, msg string) (int, []byte) {
	next := c.query.Get("next")
	if c.form != nil {
		next = c.form.Get("next")
	}
	b, err := render("login", &view{Title: "Sign in", Error: msg, Data: loginView{Next: safeNext(next)}})
	if err != nil {
		return f.fail(c, err)
	}
	return status, b
}

// safeNext is where to go after signing in: a console page, never
// another site ("//evil.example") or the sign-in page again.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "/console/login") ||
		strings.ContainsAny(next, "\\\r\n") || strings.Contains(next, "//") {
		return "/console/overview"
	}
	return next
}

// signIn checks the admin key of the sign-in form and opens a session.
// The key is compared and forgotten: the browser gets only a session ID.
func (f *Filter) signIn(ctx context.Context, c *call) (int, []byte) {
	v, retry, first := f.gate.Check(&c.x.Policy.Gateway, c.x.Header.Get("x-envoy-external-address"), c.form.Get("key"))
	switch v {
	case manage.Admitted:
	case manage.Disabled:
		return f.loginPage(c, http.StatusForbidden, "This gateway's policy sets no admin key (gateway.admin_key_sha256), so the console is closed.")
	case manage.Throttled:
		if first {
			f.audit(ctx, c, "refused", slog.String("reason", v.Reason()))
		}
		c.set = append(c.set, filters.Header{Key: "retry-after", Value: secs(retry)})
		return f.loginPage(c, http.StatusTooManyRequests, "Too many wrong keys from your address; try again in "+secs(retry)+" s.")
	default:
		f.audit(ctx, c, "refused", slog.String("reason", v.Reason()))
		return f.loginPage(c, http.StatusUnauthorized, "That is not the admin key.")
	}
	id, sess := f.sessions.create(c.x.Policy.Gateway.AdminKeyHash)
	c.sess = sess
	f.audit(ctx, c, "console.sign_in")
	c.set = append(c.set, filters.Header{Key: "set-cookie", Value: sessionCookie(id, c.secure)})
	return f.redirect(c, safeNext(c.form.Get("next")))
}

// signOut ends the session and deletes its cookie.
func (f *Filter) signOut(ctx context.Context, c *call) (int, []byte) {
	f.sessions.end(c.sid)
	f.audit(ctx, c, "console.sign_out")
	c.set = append(c.set, filters.Header{Key: "set-cookie", Value: clearedCookie(c.secure)})
	return f.redirect(c, "/console/login")
}
