package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/configs/reload"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/manage"
	"github.com/switchyard/switchyard/state/calibration"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/store"

	"github.com/prometheus/client_golang/prometheus"
)

func sha(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}

const adminKey = "sk-admin-test"

// rigPolicy has a console, an auto route and two tenants, one with apps,
// budgets and limits.
var rigPolicy = fmt.Sprintf(`
gateway:
  admin_key_sha256: %s
  governor: {high_at: 0.5, cheap_only_at: 0.9}
  tracing: {collector: "127.0.0.1:4317", viewer: "http://127.0.0.1:16686/trace/{trace_id}"}
providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: anthropic, kind: anthropic, base_url: "http://127.0.0.1:2"}
models:
  - {name: small, provider: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 2}, quality: 0.5, cheap: true}
  - {name: big, provider: anthropic, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 10, output: 20}, quality: 0.9}
routes:
  - {name: console, path: /console, api: console, filters: [console]}
  - name: chat
    path: /v1/chat/completions
    api: chat_completions
    filters: [auth, router, quota, translate, usage]
    routing: {auto: {strong_share_max: 0.4}}
tenants:
  - name: acme
    tier: pro
    budget_usd: {daily: 24, monthly: 100}
    rate_limit: {requests_per_minute: 10, tokens_per_minute: 1000}
    apps: [{name: web, budget_usd: {daily: 2}}, {name: batch}]
    keys: [{name: yaml-key, app: web, sha256: %s}]
  - name: beta
`, sha(adminKey), sha("sk-yaml"))

// rig is the console over real services: a memory store, a SQLite
// ledger, a health monitor, a calibrator and a reload reporter, with the
// audit trail in a buffer and a clock the test moves.
type rig struct {
	t     *testing.T
	p     *policy.Policy
	f     *Filter
	st    store.Store
	db    *ledger.DB
	mon   *health.Monitor
	loads *reload.Reporter
	trail bytes.Buffer
	now   time.Time
	n     int
}

func newRig(t *testing.T) *rig {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(rigPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, p: p, st: store.NewMemory(store.Options{}), now: time.Now().UTC()}
	ctx := context.Background()
	if r.db, err = ledger.OpenSQLite(ctx, filepath.Join(t.TempDir(), "usage.db"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.db.Close() })
	if r.mon, err = health.New(health.DefaultConfig(), time.Now, nil); err != nil {
		t.Fatal(err)
	}
	r.mon.Track(map[string][]string{"openai": {"small"}, "anthropic": {"big"}})
	cal := calibration.New("test", nil, nil, nil)
	cal.Track("chat", calibration.Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 200})
	trail := audit.New(&r.trail, "test")
	r.loads = reload.New(prometheus.NewRegistry(), "extproc", "configs/test", slog.New(slog.DiscardHandler), trail)
	fl, err := New(policy.FilterRef{Name: "console"}, filters.Deps{
		Policy: p, Route: p.Routes[0], Store: r.st, Health: r.mon, Calibration: cal, Usage: r.db, Audit: trail, Loads: r.loads,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.f = fl.(*Filter)
	clock := func() time.Time { return r.now }
	r.f.now, r.f.sessions, r.f.gate = clock, newSessions(clock), manage.NewGate(clock)
	return r
}

// answer is what the console answered one request.
type answer struct {
	status int
	header filters.Headers
	body   string
}

// do sends one request to the console as Envoy hands it over: lower-case
// headers, the path and query apart.
func (r *rig) do(method, target string, header filters.Headers, body string) answer {
	r.t.Helper()
	r.n++
	path, query, _ := strings.Cut(target, "?")
	h := append(filters.Headers{{Key: ":authority", Value: "127.0.0.1:8080"}, {Key: "x-envoy-external-address", Value: "127.0.0.1"}}, header...)
	if method == "POST" && h.Get("content-type") == "" {
		h = append(h, filters.Header{Key: "content-type", Value: "application/x-www-form-urlencoded"})
	}
	x := &filters.Exchange{ID: fmt.Sprintf("req-%d", r.n), Policy: r.p, Route: r.p.Routes[0], Method: method, Path: path, Query: query, Header: h, Body: []byte(body)}
	if err := r.f.RequestBody(context.Background(), x); err != nil {
		r.t.Fatalf("%s %s: %v", method, target, err)
	}
	reply := x.TakeReply()
	if reply == nil {
		r.t.Fatalf("%s %s: no reply", method, target)
	}
	return answer{status: reply.Status, header: reply.Header, body: string(reply.Body)}
}

// signIn signs in and returns the session cookie header and the CSRF
// token of the first page.
func (r *rig) signIn() (cookie filters.Header, csrf string) {
	r.t.Helper()
	a := r.do("POST", "/console/login", nil, url.Values{"key": {adminKey}}.Encode())
	if a.status != 303 {
		r.t.Fatalf("sign in: %d %s", a.status, a.body)
	}
	name, value, _ := strings.Cut(strings.Split(a.header.Get("set-cookie"), ";")[0], "=")
	cookie = filters.Header{Key: "cookie", Value: name + "=" + value}
	page := r.do("GET", "/console/overview", filters.Headers{cookie}, "")
	return cookie, csrfOf(r.t, page.body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

// post sends a form of a signed-in browser.
func (r *rig) post(cookie filters.Header, path string, form url.Values) answer {
	r.t.Helper()
	return r.do("POST", path, filters.Headers{cookie, {Key: "origin", Value: "http://127.0.0.1:8080"}, {Key: "sec-fetch-site", Value: "same-origin"}}, form.Encode())
}

// events returns the audit events written so far.
func (r *rig) events() []map[string]any {
	r.t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.trail.String()), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			r.t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// lastEvent is the last audit event of action.
func (r *rig) lastEvent(action string) map[string]any {
	r.t.Helper()
	evs := r.events()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i]["action"] == action {
			return evs[i]
		}
	}
	r.t.Fatalf("no audit event %q in:\n%s", action, r.trail.String())
	return nil
}

// withCookie is the header list of a signed-in browser's page request.
func withCookie(cookie filters.Header) filters.Headers { return filters.Headers{cookie} }
