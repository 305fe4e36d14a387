package usage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/store"
)

const testPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: an, kind: anthropic, base_url: "http://127.0.0.1:2"}
models:
  - {name: gpt, provider: oa, context_window: 100000, max_output_tokens: 4000, capabilities: [chat, stream], price_usd_per_mtok: {input: 2.5, output: 10}}
  - {name: claude, provider: an, context_window: 100000, max_output_tokens: 4000, capabilities: [chat, stream], price_usd_per_mtok: {input: 3, output: 15, cache_write: 3.75, cache_write_1h: 6}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions}
tenants:
  - {name: acme}
  - {name: spy, audit: {capture_prompts: true}}
`

func testPolicyCompiled(t testing.TB) *policy.Policy {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func tenant(t testing.TB, p *policy.Policy, name string) *policy.Tenant {
	t.Helper()
	for _, tn := range p.Tenants {
		if tn.Name == name {
			return tn
		}
	}
	t.Fatalf("no tenant %s", name)
	return nil
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// exchange is a chat request of tenant acme, app web, that the router
// planned as gpt then claude.
func exchange(t testing.TB, p *policy.Policy, body string) *filters.Exchange {
	t.Helper()
	chat, err := openaiapi.ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return &filters.Exchange{
		ID: "req-1", Started: t0, Policy: p, Route: p.Routes[0], Body: []byte(body), Chat: chat,
		Caller:      filters.Caller{Tenant: tenant(t, p, "acme"), KeyName: "acme-web", App: "web"},
		Plan:        []filters.Target{{Model: p.Model("gpt")}, {Model: p.Model("claude")}},
		RouteReason: "strategy cost-optimized; skipped x (down)",
	}
}

// attempt records attempt n of x with the given outcome.
func attempt(x *filters.Exchange, n, status int) {
	a, _ := x.NewAttempt(n, t0)
	a.Finish(filters.Outcome{Done: true, Status: status})
}

func TestRecordOf(t *testing.T) {
	p := testPolicyCompiled(t)
	const body = `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	base := ledger.Record{
		RequestID: "req-1", Time: t0, Tenant: "acme", App: "web", KeyName: "acme-web", Route: "chat",
		RequestedModel: "gpt", Latency: 3 * time.Second,
		// The router's reason for the plan every case starts from.
		RouteReason: "strategy cost-optimized; skipped x (down)",
	}
	tests := []struct {
		name  string
		setup func(x *filters.Exchange)
		cause error
		want  func(r *ledger.Record)
	}{
		{
			name: "served stream with its first token",
			setup: func(x *filters.Exchange) {
				attempt(x, 1, 200)
				x.Response = filters.Response{Status: 200, Streaming: true}
				x.Sent = filters.Sent{FirstToken: t0.Add(400 * time.Millisecond), Complete: true}
				x.Usage = filters.Usage{Known: true, PromptTokens: 10, CompletionTokens: 20, CachedTokens: 4, CostMicros: 225}
			},
			want: func(r *ledger.Record) {
				r.ServedModel, r.Provider, r.Stream, r.Attempts, r.Status = "gpt", "oa", true, 1, 200
				r.PriceSource = "catalog"
				r.InputTokens, r.OutputTokens, r.CachedTokens, r.CostMicros, r.CacheHit = 10, 20, 4, 225, true
				r.TimeToFirstToken = 400 * time.Millisecond
			},
		},
		{
			name: "a learning route's domain and the score it was routed by",
			setup: func(x *filters.Exchange) {
				attempt(x, 1, 200)
				x.Response = filters.Response{Status: 200}
				x.Routing = filters.Routing{Score: 0.42, Domain: learntDomain(t)}
			},
			want: func(r *ledger.Record) {
				r.ServedModel, r.Provider, r.Attempts, r.Status, r.PriceSource = "gpt", "oa", 1, 200, "catalog"
				r.Domain, r.RoutingScore = "00000000c0ffee00", 0.42
			},
		},
		{
			name: "a response cache hit: no provider, no cost, what it saved",
			setup: func(x *filters.Exchange) {
				x.Response = filters.Response{Status: 200}
				x.Usage = filters.Usage{Known: true, PromptTokens: 10, CompletionTokens: 20}
				x.Cached = filters.Cached{How: "hit", Model: "gpt", SavedMicros: 225}
			},
			want: func(r *ledger.Record) {
				r.ServedModel, r.Provider, r.Status, r.SavedMicros = "gpt", CacheProvider, 200, 225
				r.InputTokens, r.OutputTokens = 10, 20
			},
		},
		{
			name: "its tags and session",
			setup: func(x *filters.Exchange) {
				if err := x.SetLabels(nil, "team=search,env=prod", "run-7"); err != nil {
					t.Fatal(err)
				}
				x.Response = filters.Response{Status: 200}
			},
			want: func(r *ledger.Record) {
				r.Status, r.Tags, r.SessionID = 200, map[string]string{"team": "search", "env": "prod"}, "run-7"
			},
		},
		{
			name: "fallback: the failed attempts and why, a missing one as no response",
			setup: func(x *filters.Exchange) {
				x.Plan = append(x.Plan, filters.Target{Model: p.Model("gpt")})
				attempt(x, 1, 503)
				attempt(x, 3, 200)
				x.Response = filters.Response{Status: 200}
			},
			want: func(r *ledger.Record) {
				r.ServedModel, r.Provider, r.Attempts, r.Status = "gpt", "oa", 3, 200
				r.PriceSource = "catalog"
				r.FallbackReasons = []string{"oa/gpt: 503", "an/claude: no response"}
			},
		},
		{
			name: "hedged: the first answered, the hedge lost, both charged",
			setup: func(x *filters.Exchange) {
				x.Hedge = &filters.Hedge{After: time.Second}
				attempt(x, 1, 200)
				a, _ := x.NewAttempt(2, t0)
				a.Finish(filters.Outcome{Cause: filters.CauseHedged, Failure: "hedge lost: attempt 1 answered first"})
				x.SetAnswered(1)
				x.Response = filters.Response{Status: 200}
				x.Usage = filters.Usage{Known: true, PromptTokens: 10, CompletionTokens: 20, CostMicros: 500, HedgedMicros: 275, Estimated: true}
			},
			want: func(r *ledger.Record) {
				r.ServedModel, r.Provider, r.Attempts, r.Status = "gpt", "oa", 2, 200
				r.PriceSource = "catalog"
				r.InputTokens, r.OutputTokens, r.CostMicros, r.UsageEstimated = 10, 20, 500, true
				r.FallbackReasons = []string{"an/claude: hedge lost"}
			},
		},
		{
			name: "every provider failed: Envoy's 503 passed through",
			setup: func(x *filters.Exchange) {
				attempt(x, 1, 429)
				a, _ := x.NewAttempt(2, t0)
				a.Finish(filters.Outcome{Done: true, Failure: "reset"})
				x.Response = filters.Response{Status: 503}
			},
			want: func(r *ledger.Record) {
				r.ServedModel, r.Provider, r.Attempts, r.Status = "claude", "an", 2, 503
				r.PriceSource = "catalog"
				r.ErrorType = openaiapi.TypeServiceUnavailable
				r.FallbackReasons = []string{"oa/gpt: 429", "an/claude: no response"}
			},
		},
		{
			name: "refused by a filter before any attempt",
			setup: func(x *filters.Exchange) {
				x.Caller = filters.Caller{}
				x.Response.Status = 401
			},
			cause: filters.Reject(http.StatusUnauthorized, openaiapi.TypeInvalidRequest, "invalid_api_key", "no"),
			want: func(r *ledger.Record) {
				r.Tenant, r.App, r.KeyName, r.Status, r.ErrorType = "", "", "", 401, openaiapi.TypeInvalidRequest
			},
		},
		{
			name: "client left mid-stream: 499, with the estimate",
			setup: func(x *filters.Exchange) {
				attempt(x, 1, 200)
				x.Response = filters.Response{Status: 200, Streaming: true}
				x.Sent = filters.Sent{FirstToken: t0.Add(time.Second), Text: []byte("Hel")}
				x.Usage = filters.Usage{Known: true, PromptTokens: 8, CompletionTokens: 1, CostMicros: 30, Estimated: true}
			},
			cause: filters.ErrClientGone,
			want: func(r *ledger.Record) {
				r.ServedModel, r.Provider, r.Stream, r.Attempts = "gpt", "oa", true, 1
				r.PriceSource = "catalog"
				r.Status, r.ErrorType = StatusClientClosed, ErrorClientDisconnected
				r.InputTokens, r.OutputTokens, r.CostMicros, r.UsageEstimated = 8, 1, 30, true
				r.TimeToFirstToken = time.Second
			},
		},
		{
			name: "provider broke off after the headers: 200 with the error event's type",
			setup: func(x *filters.Exchange) {
				attempt(x, 1, 200)
				x.Response = filters.Response{Status: 200, Streaming: true}
				x.Sent = filters.Sent{Complete: true, ErrorType: openaiapi.TypeUpstream}
			},
			want: func(r *ledger.Record) {
				r.ServedModel, r.Provider, r.Stream, r.Attempts, r.Status = "gpt", "oa", true, 1, 200
				r.PriceSource = "catalog"
				r.ErrorType = openaiapi.TypeUpstream
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := exchange(t, p, body)
			tt.setup(x)
			want := base
			tt.want(&want)
			got := RecordOf(x, tt.cause, t0.Add(3*time.Second))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecision(t *testing.T) {
	tests := []struct{ name, reason, wantKind, wantName string }{
		{"rule", "rule long-context; skipped gpt (down)", "rule", "long-context"},
		{"strategy", "strategy cost-optimized", "strategy", "cost-optimized"},
		{"client", "model named by the client; probing openai", "client", ""},
		{"embeddings", "embedding model named by the client", "client", ""},
		{"unknown", "something new", "other", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if k, n := decision(tt.reason); k != tt.wantKind || n != tt.wantName {
				t.Errorf("decision(%q) = %q, %q; want %q, %q", tt.reason, k, n, tt.wantKind, tt.wantName)
			}
		})
	}
}

// TestUnauthenticatedIsOnlyCounted: a 401 with no caller writes no ledger
// row, no audit line and no usage log line; it is counted by route.
func TestUnauthenticatedIsOnlyCounted(t *testing.T) {
	p := testPolicyCompiled(t)
	ctx := context.Background()
	db, err := ledger.OpenSQLite(ctx, filepath.Join(t.TempDir(), "usage.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	w := ledger.NewWriter(db, ledger.WriterOptions{})
	reg := prometheus.NewRegistry()
	var trail, logs bytes.Buffer
	fl, err := New(policy.FilterRef{Name: "usage"}, filters.Deps{
		Policy: p, Metrics: reg, Ledger: w, Audit: audit.New(&trail, "extproc"),
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	f := fl.(*Filter)
	for range 3 {
		x := &filters.Exchange{ID: "anon", Started: t0, Policy: p, Route: p.Routes[0], Response: filters.Response{Status: http.StatusUnauthorized}}
		f.Done(ctx, x, openaiapi.Errorf(http.StatusUnauthorized, openaiapi.TypeAuthentication, "invalid_api_key", "bad key"))
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for r, err := range db.Records(ctx, ledger.Filter{}) {
		t.Errorf("ledger row %+v (err %v), want none", r, err)
	}
	if trail.Len() != 0 || logs.Len() != 0 {
		t.Errorf("audit %q, log %q; want neither", trail.String(), logs.String())
	}
	var m dto.Metric
	if err := f.metrics.anonymous.WithLabelValues(p.Routes[0].Name).Write(&m); err != nil || m.GetCounter().GetValue() != 3 {
		t.Errorf("unauthenticated count %v (%v), want 3", m.GetCounter().GetValue(), err)
	}
}

// TestDone sends one request through Done and finds it in the ledger, the
// metrics, the audit trail and the log.
func TestDone(t *testing.T) {
	p := testPolicyCompiled(t)
	ctx := context.Background()
	db, err := ledger.OpenSQLite(ctx, filepath.Join(t.TempDir(), "usage.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	w := ledger.NewWriter(db, ledger.WriterOptions{})
	reg := prometheus.NewRegistry()
	var trail, logs bytes.Buffer
	fl, err := New(policy.FilterRef{Name: "usage"}, filters.Deps{
		Policy: p, Metrics: reg, Ledger: w, Audit: audit.New(&trail, "extproc"),
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	f := fl.(*Filter)
	f.now = func() time.Time { return t0.Add(2 * time.Second) }

	x := exchange(t, p, `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`)
	x.Plan = append(x.Plan, filters.Target{Model: p.Model("claude")})
	attempt(x, 1, 503)
	attempt(x, 2, 200)
	x.Response = filters.Response{Status: 200}
	x.Sent = filters.Sent{FirstToken: t0.Add(time.Second), Complete: true}
	x.Usage = filters.Usage{Known: true, PromptTokens: 100, CompletionTokens: 50, CostMicros: 1050}
	x.Routing.Split = "claude"
	f.Done(ctx, x, nil)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var rows []ledger.Record
	for r, err := range db.Records(ctx, ledger.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) != 1 || rows[0].RequestID != "req-1" || rows[0].CostMicros != 1050 || rows[0].ServedModel != "claude" {
		t.Fatalf("ledger rows %+v, want req-1 served by claude for 1050", rows)
	}

	metricTests := []struct {
		name string
		c    prometheus.Counter
		want float64
	}{
		{"requests by status", f.metrics.requests.WithLabelValues("acme", "web", "claude", "an", "200"), 1},
		{"cost", f.metrics.cost.WithLabelValues("acme", "web", "claude", "an"), 1050},
		{"output tokens", f.metrics.tokens.WithLabelValues("acme", "web", "claude", "an", "output"), 50},
		{"fallback by reason", f.metrics.fallbacks.WithLabelValues("oa", "gpt", "503", "chat"), 1},
		{"routing decision", f.metrics.decisions.WithLabelValues("chat", "strategy", "cost-optimized"), 1},
		{"traffic split arm", f.metrics.split.WithLabelValues("chat", "claude", "claude"), 1},
	}
	for _, tt := range metricTests {
		var m dto.Metric
		if err := tt.c.Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetCounter().GetValue(); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	histTests := []struct {
		name      string
		match     string // a label value the series has
		wantCount uint64
		wantSum   float64
	}{
		{"gen_ai_client_token_usage", "input", 1, 100},
		{"gen_ai_client_token_usage", "output", 1, 50},
		{"gen_ai_server_request_duration_seconds", "anthropic", 1, 2},
		{"gen_ai_server_time_to_first_token_seconds", "anthropic", 1, 1},
	}
	for _, tt := range histTests {
		count, sum := histogram(t, reg, tt.name, tt.match)
		if count != tt.wantCount || sum != tt.wantSum {
			t.Errorf("%s{…%q…}: %d samples summing to %v, want %d summing to %v", tt.name, tt.match, count, sum, tt.wantCount, tt.wantSum)
		}
	}

	var ev map[string]any
	if err := json.Unmarshal(trail.Bytes(), &ev); err != nil {
		t.Fatalf("audit trail %q: %v", trail.String(), err)
	}
	sum := sha256.Sum256(x.Body)
	if ev["kind"] != "audit" || ev["prompt_sha256"] != hex.EncodeToString(sum[:]) || ev["routing_reason"] != x.RouteReason || ev["prompt"] != nil {
		t.Errorf("audit event %v", ev)
	}
	if !strings.Contains(logs.String(), `"request_id":"req-1"`) {
		t.Errorf("log %q lacks the request ID", logs.String())
	}
}

// histogram returns the sample count and sum of the one series of name
// that has a label with value match.
func histogram(t *testing.T, reg *prometheus.Registry, name, match string) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == match {
					return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0, 0
}

// TestStrongCost: an auto-routed request records what the strongest model
// the caller may use would have cost (the pricier on equal quality), its
// prompt-cache writes at that model's write rates; a request that names
// its model records none.
func TestStrongCost(t *testing.T) {
	p := testPolicyCompiled(t)
	for _, tt := range []struct {
		model          string
		write, write1h int
		want           int64
	}{
		{model: "auto", want: 1000*3 + 1000*15},
		{model: "auto", write: 200, write1h: 100, want: 700*3 + 200*3.75 + 100*6 + 1000*15},
		{model: "gpt", write: 200, want: 0},
	} {
		x := exchange(t, p, `{"model":"`+tt.model+`","messages":[{"role":"user","content":"hi"}]}`)
		attempt(x, 1, 200)
		x.Response = filters.Response{Status: 200}
		x.Usage = filters.Usage{Known: true, PromptTokens: 1000, CompletionTokens: 1000, CacheWriteTokens: tt.write, CacheWrite1hTokens: tt.write1h, CostMicros: 12_500}
		if got := RecordOf(x, nil, t0).StrongCostMicros; got != tt.want {
			t.Errorf("model %q, %d+%d written: strong cost %d, want %d", tt.model, tt.write, tt.write1h, got, tt.want)
		}
	}
}

// learntDomain is a domain of a learning route: app web, fingerprint
// c0ffee00.
func learntDomain(t *testing.T) *priors.Domain {
	t.Helper()
	l := priors.New(store.NewMemory(store.Options{}), nil, nil)
	r, err := l.Track("chat", priors.Config{Curve: []float64{0.75, 1}, HalfLife: time.Hour, MaxDomains: 1, PriorWeight: 8})
	if err != nil {
		t.Fatal(err)
	}
	return r.Domain("acme", "web", 0xc0ffee00)
}
