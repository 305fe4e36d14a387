// Package console is the filter that serves the operator's console under
// /console: web pages, signed in with the admin key, that show the
// gateway's traffic, spend, tenants, keys, providers, routing and policy,
// and that issue, rotate and revoke keys and run fault drills. It answers
// from the gateway itself, reading what the admin API reads (package
// manage, the ledger's reports, the health monitor, the calibrator, the
// policy loads); nothing reaches a provider.
//
// The pages are server-rendered html/template with htmx for the parts that
// refresh themselves and Chart.js for the charts, all embedded in the
// binary (web/). Every answer carries a Content-Security-Policy that
// allows no inline script or style; every change needs the session's CSRF
// token and is written to the audit trail.
package console

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/configs/reload"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/manage"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/ledger/report"
	"github.com/switchyard/switchyard/state/probe"
	"github.com/switchyard/switchyard/state/store"
)

func init() { filters.Register("console", New) }

// Filter serves the console.
type Filter struct {
	store    store.Store
	health   *health.Monitor
	cal      *calibration.Calibrator
	usage    report.Source
	trail    *audit.Logger
	loads    *reload.Reporter
	log      *slog.Logger
	sessions *sessions
	gate     *manage.Gate
	now      func() time.Time
	// tracing is the policy's, for the link from a request to its trace.
	tracing *policy.Tracing
	// probes reads the capability probes' verdicts; nil when none run.
	probes func() []probe.Record
}

// New builds the console filter; it takes no arguments.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	if err := filterspec.NoArgs(ref); err != nil {
		return nil, err
	}
	f := &Filter{
		store: deps.Store, health: deps.Health, cal: deps.Calibration,
		usage: report.Source{Writer: deps.Ledger, Ledger: deps.Usage},
		trail: deps.Audit, loads: deps.Loads, log: deps.Log(),
		sessions: process, gate: manage.NewGate(time.Now), now: time.Now,
		tracing: deps.Policy.Gateway.Tracing,
	}
	if deps.Probes != nil {
		f.probes = deps.Probes.Snapshot
	}
	return f, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "console" }

// securityHeaders go on every answer. The policy allows scripts, styles,
// images and requests from the console's own origin only: no inline
// script, no inline style, no other site, no framing. The referrer goes
// to the console's own pages only; with none at all a browser sends
// "Origin: null" on a form, and the origin check could not tell the
// console's forms from another site's.
var securityHeaders = []filters.Header{
	{Key: "content-security-policy", Value: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
	{Key: "x-content-type-options", Value: "nosniff"},
	{Key: "x-frame-options", Value: "DENY"},
	{Key: "referrer-policy", Value: "same-origin"},
	{Key: "cross-origin-opener-policy", Value: "same-origin"},
}

// call is one console request.
type call struct {
	x   *filters.Exchange
	sub string // the path below /console, without its leading slash
	// secure is set when the browser reached the gateway over TLS.
	secure bool
	query  url.Values
	form   url.Values
	// htmx marks a page's own background refresh, which is not activity.
	htmx bool
	sid  string
	sess *session
	// set are the headers of the answer beyond the security headers.
	set []filters.Header
}

// RequestBody implements [filters.RequestBodyHook]: every console request
// is answered here, GETs included (they reach it with an empty body).
func (f *Filter) RequestBody(ctx context.Context, x *filters.Exchange) error {
	c := &call{
		x:      x,
		sub:    strings.TrimPrefix(strings.TrimPrefix(x.Path, x.Route.Path), "/"),
		secure: x.Header.Get("x-forwarded-proto") == "https",
		htmx:   x.Header.Get("hx-request") == "true",
	}
	c.query, _ = url.ParseQuery(x.Query)
	if name, rest, ok := strings.Cut(c.sub, "/"); ok && name == "static" {
		f.static(c, rest)
		return nil
	}
	status, body := f.serve(ctx, c)
	x.Respond(status, body, append(append([]filters.Header{{Key: "content-type", Value: "text/html; charset=utf-8"},
		{Key: "cache-control", Value: "no-store"}}, securityHeaders...), c.set...)...)
	return nil
}

// serve answers c with a status and a page.
func (f *Filter) serve(ctx context.Context, c *call) (int, []byte) {
	switch c.x.Method {
	case http.MethodGet:
	case http.MethodPost:
		if !sameOrigin(c.x.Header) {
			return f.problem(c, http.StatusForbidden, "This form came from another site; the console takes changes from its own pages only.")
		}
		if ct, _, _ := strings.Cut(c.x.Header.Get("content-type"), ";"); strings.TrimSpace(ct) != "application/x-www-form-urlencoded" {
			return f.problem(c, http.StatusUnsupportedMediaType, "The console takes forms (application/x-www-form-urlencoded).")
		}
		form, err := url.ParseQuery(string(c.x.Body))
		if err != nil {
			return f.problem(c, http.StatusBadRequest, "The form does not parse.")
		}
		c.form = form
	default:
		c.set = append(c.set, filters.Header{Key: "allow", Value: "GET, POST"})
		return f.problem(c, http.StatusMethodNotAllowed, "The console answers GET and POST only.")
	}
	if c.sub == "login" {
		if c.x.Method == http.MethodPost {
			return f.signIn(ctx, c)
		}
		return f.loginPage(c, http.StatusOK, "")
	}
	c.sid = cookieValue(c.x.Header.Get("cookie"), c.secure)
	c.sess = f.sessions.lookup(c.sid, &c.x.Policy.Gateway, !c.htmx)
	if c.sess == nil {
		return f.signedOut(c)
	}
	if c.x.Method == http.MethodPost {
		if !c.sess.validCSRF(c.form.Get("csrf")) {
			f.audit(ctx, c, "refused", slog.String("reason", "csrf"), slog.String("path", clip(c.x.Path)))
			return f.problem(c, http.StatusForbidden, "This form is stale or was not made by the console (its CSRF token does not match); reload the page and try again.")
		}
		return f.change(ctx, c)
	}
	return f.page(ctx, c)
}

// sameOrigin reports whether a POST came from a page of this host.
// Browsers send Origin with every POST and Sec-Fetch-Site with most; a
// request that carries neither is not a browser's, so no other site can
// have made it.
func sameOrigin(h filters.Headers) bool {
	if s := h.Get("sec-fetch-site"); s != "" && s != "same-origin" {
		return false
	}
	o := h.Get("origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && u.Host == h.Get(":authority")
}

// signedOut sends a browser without a live session to the sign-in page,
// back to where it was going once signed in.
func (f *Filter) signedOut(c *call) (int, []byte) {
	to := "/console/login"
	if c.x.Method == http.MethodGet && c.sub != "" {
		to += "?next=" + url.QueryEscape(c.x.Path)
	}
	if c.htmx {
		// htmx follows this header with a full page load.
		c.set = append(c.set, filters.Header{Key: "hx-redirect", Value: to})
		return http.StatusOK, nil
	}
	return f.redirect(c, to)
}

func (f *Filter) redirect(c *call, to string) (int, []byte) {
	c.set = append(c.set, filters.Header{Key: "location", Value: to})
	return http.StatusSeeOther, nil
}

// problem answers with a page that says what went wrong.
func (f *Filter) problem(c *call, status int, msg string) (int, []byte) {
	b, err := render("problem", &view{Title: http.StatusText(status), Error: msg})
	if err != nil {
		return http.StatusInternalServerError, []byte("console: " + err.Error())
	}
	return status, b
}

// static serves a file of web/static.
func (f *Filter) static(c *call, rest string) {
	hash, name, _ := strings.Cut(rest, "/")
	a, ok := assets()[name]
	if !ok || c.x.Method != http.MethodGet {
		c.x.Respond(http.StatusNotFound, []byte("not found\n"), filters.Header{Key: "content-type", Value: "text/plain; charset=utf-8"})
		return
	}
	cache := "no-cache"
	if hash == a.hash {
		cache = "public, max-age=31536000, immutable"
	}
	c.x.Respond(http.StatusOK, a.body, append([]filters.Header{{Key: "content-type", Value: a.contentType}, {Key: "cache-control", Value: cache}}, securityHeaders...)...)
}

// audit records a console action: the admin key's holder did it, through
// the console session named by its reference, from the client's address.
func (f *Filter) audit(ctx context.Context, c *call, action string, attrs ...slog.Attr) {
	actor := "admin"
	ref := ""
	if c.sess != nil {
		ref = c.sess.ref
	} else {
		actor = "unauthenticated"
	}
	f.trail.Admin(ctx, c.x.ID, actor, action, append([]slog.Attr{slog.String("via", "console"), slog.String("session", ref),
		slog.String("client", c.x.Header.Get("x-envoy-external-address"))}, attrs...)...)
}

// clip bounds a client string before it reaches the trail.
func clip(s string) string {
	if len(s) > 256 {
		return s[:256]
	}
	return s
}

// refusal is the status and message of a refusal from the services the
// console calls; any other failure is logged, and the browser told only
// where to look.
func (f *Filter) refusal(c *call, err error) (int, string) {
	var oe *openaiapi.Error
	if errors.As(err, &oe) {
		return oe.Status, oe.Message
	}
	f.log.Error("console", slog.String("request_id", c.x.ID), slog.String("path", clip(c.x.Path)), slog.String("error", err.Error()))
	return http.StatusInternalServerError, "The gateway failed to do this; its log says why (request " + c.x.ID + ")."
}

// secs writes a duration in whole seconds, at least one.
func secs(d time.Duration) string { return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second))) }

var _ filters.RequestBodyHook = (*Filter)(nil)

// fail answers with the page of a failure.
func (f *Filter) fail(c *call, err error) (int, []byte) {
	status, msg := f.refusal(c, err)
	return f.problem(c, status, msg)
}
