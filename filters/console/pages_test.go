package console

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/probe"
	"github.com/switchyard/switchyard/state/store"
)

// seed writes ledger rows over the last hour and spends acme's budgets.
func (r *rig) seed() {
	r.t.Helper()
	ctx := context.Background()
	recs := []ledger.Record{
		{RequestID: "r-ok", Tenant: "acme", App: "web", KeyName: "yaml-key", Route: "chat", RequestedModel: "small", ServedModel: "small", Provider: "openai",
			Attempts: 1, Status: 200, InputTokens: 100, OutputTokens: 50, CostMicros: 2_000_000},
		{RequestID: "r-fallback", Tenant: "acme", App: "batch", Route: "chat", RequestedModel: "big", ServedModel: "small", Provider: "openai",
			Attempts: 2, FallbackReasons: []string{"anthropic/big: 503"}, Status: 200, InputTokens: 10, OutputTokens: 5, CostMicros: 30, CachedTokens: 4, CacheHit: true},
		{RequestID: "r-failed", Tenant: "beta", Route: "chat", RequestedModel: "big", ServedModel: "small", Provider: "openai",
			Attempts: 2, FallbackReasons: []string{"anthropic/big: no response", "openai/small: 502"}, Status: 502, ErrorType: "upstream_error",
			RouteReason: "requested model, then fallback", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{RequestID: "r-refused", Tenant: "beta", Route: "chat", RequestedModel: "big", Status: 429, ErrorType: "insufficient_quota"},
	}
	for i := range recs {
		recs[i].Time = r.now.Add(-time.Duration(len(recs)-i) * time.Minute)
	}
	if _, err := r.db.Insert(ctx, recs); err != nil {
		r.t.Fatal(err)
	}
	// acme spends $12 of its $24 day (its hour's $1 slot twelve times
	// over: red) and $1.20 of its web app's $2 day (amber at 0.5).
	for _, sp := range []struct {
		scope  store.Scope
		micros int64
	}{{store.Scope{Tenant: "acme"}, 12_000_000}, {store.Scope{Tenant: "acme", App: "web"}, 1_200_000}} {
		id := store.ReservationID{Tenant: "acme", Request: "seed-" + sp.scope.String()}
		line := store.BudgetLine{Scope: sp.scope, Period: store.Daily, Limit: 1 << 40}
		if err := r.st.Reserve(ctx, id, []store.BudgetLine{line}, sp.micros, time.Hour); err != nil {
			r.t.Fatal(err)
		}
		if _, err := r.st.Commit(ctx, id, sp.micros); err != nil {
			r.t.Fatal(err)
		}
	}
}

var chartRE = regexp.MustCompile(`id="chart-(\w+)" data-chart="([^"]*)"`)

// charts reads the charts' JSON out of a page.
func charts(t *testing.T, page string) map[string]chart {
	t.Helper()
	out := map[string]chart{}
	for _, m := range chartRE.FindAllStringSubmatch(page, -1) {
		var c chart
		if err := json.Unmarshal([]byte(html.UnescapeString(m[2])), &c); err != nil {
			t.Fatalf("chart %s: %v", m[1], err)
		}
		out[m[1]] = c
	}
	return out
}

// TestOverview: the totals and the charts are the ledger's sums, by
// tenant or by model, over the window asked for.
func TestOverview(t *testing.T) {
	r := newRig(t)
	cookie, _ := r.signIn()
	r.seed()
	tests := []struct {
		query      string
		wantSeries []string
		wantTotals map[string]float64
	}{
		{"", []string{"acme", "beta"}, map[string]float64{"requests": 4, "errors": 2, "spend": 2.00003, "tokens": 165}},
		{"?window=day&by=model", []string{"small", "big"}, map[string]float64{"requests": 4, "errors": 2, "spend": 2.00003, "tokens": 165}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			a := r.do("GET", "/console/overview"+tt.query, withCookie(cookie), "")
			if a.status != 200 || !strings.Contains(a.body, `id="total-requests">4<`) || !strings.Contains(a.body, `id="total-spend">$2.00<`) {
				t.Fatalf("%d:\n%s", a.status, a.body)
			}
			cs := charts(t, a.body)
			for id, want := range tt.wantTotals {
				c := cs[id]
				var names []string
				for _, s := range c.Series {
					names = append(names, s.Name)
				}
				if diff := cmp.Diff(tt.wantSeries, names); diff != "" {
					t.Errorf("%s series (-want +got):\n%s", id, diff)
				}
				if d := c.Total - want; d > 1e-9 || d < -1e-9 {
					t.Errorf("%s total %g, want %g", id, c.Total, want)
				}
			}
			if !strings.Contains(a.body, `data-provider="openai" data-state="healthy"`) {
				t.Error("no provider strip")
			}
		})
	}
}

// TestTenantBars: budgets and limits turn amber and red at the
// governor's thresholds (0.5 and 0.9 here).
func TestTenantBars(t *testing.T) {
	r := newRig(t)
	cookie, _ := r.signIn()
	r.seed()
	a := r.do("GET", "/console/tenants", withCookie(cookie), "")
	if a.status != 200 {
		t.Fatalf("%d:\n%s", a.status, a.body)
	}
	for label, want := range map[string]string{
		`this hour&#39;s slot of the daily budget`: "red", // $12 of a $1 slot
		`today`:                       "amber", // $12 of $24
		`this month`:                  "ok",    // $0 of $100
		`requests in the last minute`: "ok",    // 1 of 10
	} {
		re := regexp.MustCompile(`data-level="(\w+)" data-label="` + regexp.QuoteMeta(label) + `"`)
		m := re.FindStringSubmatch(a.body)
		if m == nil || m[1] != want {
			t.Errorf("%s: %v, want %s", label, m, want)
		}
	}
	if !strings.Contains(a.body, `<meter min="0" max="1" low="0.5" high="0.9" optimum="0" value="0.5">`) {
		t.Error("acme's day is not a meter at 0.5 with the governor's thresholds")
	}
}

// TestRequests: the list is the ledger's newest rows the filter selects;
// a request's page rebuilds its attempts and says whose doing its end was.
func TestRequests(t *testing.T) {
	r := newRig(t)
	cookie, _ := r.signIn()
	r.seed()
	rows := regexp.MustCompile(`data-request="([\w-]+)"`)
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"r-refused", "r-failed", "r-fallback", "r-ok"}},
		{"?tenant=acme", []string{"r-fallback", "r-ok"}},
		{"?status=error", []string{"r-refused", "r-failed"}},
		{"?status=5xx&tenant=beta", []string{"r-failed"}},
		{"?model=small&app=web", []string{"r-ok"}},
		{"?from=" + r.now.Add(-150*time.Second).Format(time.RFC3339), []string{"r-refused", "r-failed"}},
	}
	for _, tt := range tests {
		a := r.do("GET", "/console/requests"+tt.query, withCookie(cookie), "")
		var got []string
		for _, m := range rows.FindAllStringSubmatch(a.body, -1) {
			got = append(got, m[1])
		}
		if a.status != 200 || !cmp.Equal(got, tt.want) {
			t.Errorf("%s: %d %v, want %v", tt.query, a.status, got, tt.want)
		}
	}
	if a := r.do("GET", "/console/requests?status=teapot", withCookie(cookie), ""); a.status != 400 {
		t.Errorf("a bad status filter: %d", a.status)
	}

	a := r.do("GET", "/console/requests/r-failed", withCookie(cookie), "")
	for _, want := range []string{
		`<tr data-attempt="1"><td class="n">1</td><td>anthropic</td><td>big</td><td>no response</td><td>provider: no response</td></tr>`,
		`<tr data-attempt="2"><td class="n">2</td><td>openai</td><td>small</td><td>502</td><td>provider: error</td></tr>`,
		`provider: 502 (upstream_error)`,
		`<dd id="route-reason">requested model, then fallback</dd>`,
		`<dd id="trace"><a href="http://127.0.0.1:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736">4bf92f3577b34da6a3ce929d0e0e4736</a></dd>`,
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("r-failed lacks %s:\n%s", want, a.body)
		}
	}
	if a := r.do("GET", "/console/requests/r-ok", withCookie(cookie), ""); !strings.Contains(a.body, `<dd id="trace">—</dd>`) {
		t.Errorf("a request without a trace links to one:\n%s", a.body)
	}
	if a := r.do("GET", "/console/requests/nope", withCookie(cookie), ""); a.status != 404 {
		t.Errorf("an unknown request: %d", a.status)
	}
}

func TestAttempts(t *testing.T) {
	tests := []struct {
		name      string
		r         ledger.Record
		want      []attempt
		wantBlame string
	}{
		{"served at once", ledger.Record{Provider: "openai", ServedModel: "m", Attempts: 1, Status: 200},
			[]attempt{{1, "openai", "m", "200", "none: served"}}, "none: served"},
		{"served after a fallback", ledger.Record{Provider: "openai", ServedModel: "m", Attempts: 2, FallbackReasons: []string{"anthropic/c: 429"}, Status: 200},
			[]attempt{{1, "anthropic", "c", "429", "provider: rate limited"}, {2, "openai", "m", "200", "none: served"}}, "none: served"},
		{"every attempt failed", ledger.Record{Provider: "openai", ServedModel: "m", Attempts: 1, FallbackReasons: []string{"openai/m: no response"}, Status: 503, ErrorType: "upstream_error"},
			[]attempt{{1, "openai", "m", "no response", "provider: no response"}}, "provider: 503 (upstream_error)"},
		{"refused before any provider", ledger.Record{Status: 401, ErrorType: "invalid_request_error"},
			nil, "gateway: refused before any provider (invalid_request_error)"},
		{"the client left", ledger.Record{Provider: "openai", ServedModel: "m", Attempts: 1, Status: 499, ErrorType: "client_disconnected"},
			[]attempt{{1, "openai", "m", "499", "client: it went away before the answer"}}, "client: it went away before the answer"},
		{"the provider refused the request", ledger.Record{Provider: "openai", ServedModel: "m", Attempts: 1, Status: 400, ErrorType: "invalid_request_error"},
			[]attempt{{1, "openai", "m", "400", "client: the provider refused the request as sent (invalid_request_error)"}}, "client: the provider refused the request as sent (invalid_request_error)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, attempts(tt.r), cmp.AllowUnexported(attempt{})); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
			if got := endBlame(tt.r); got != tt.wantBlame {
				t.Errorf("blame %q, want %q", got, tt.wantBlame)
			}
		})
	}
}

// TestRoutingAndPolicy: the Routing page shows an auto route's strong
// share; the Policy page the version serving and the last edit refused,
// with its file:line errors.
func TestRoutingAndPolicy(t *testing.T) {
	r := newRig(t)
	cookie, _ := r.signIn()
	r.seed()
	a := r.do("GET", "/console/routing", withCookie(cookie), "")
	if a.status != 200 || !strings.Contains(a.body, `<dd class="share">40.0%</dd>`) || !strings.Contains(a.body, `<tr data-tenant="acme">`) {
		t.Fatalf("routing: %d:\n%s", a.status, a.body)
	}

	r.loads.Applied(context.Background(), r.p.Version)
	a = r.do("GET", "/console/policy", withCookie(cookie), "")
	if a.status != 200 || !strings.Contains(a.body, r.p.Version) || !strings.Contains(a.body, `id="refused-none"`) {
		t.Fatalf("policy: %d:\n%s", a.status, a.body)
	}
	r.loads.Refused(context.Background(), errors.Join(
		errors.New("configs/local/routes.yaml:12:5: routes[chat].api: must be one of ..."),
		errors.New("configs/local/tenants.yaml:3:1: tenants[x].budget_usd.daily: must be > 0")))
	a = r.do("GET", "/console/policy", withCookie(cookie), "")
	for _, want := range []string{`class="refused pending"`, `<li><code>configs/local/routes.yaml:12:5: routes[chat].api: must be one of ...</code></li>`, `tenants.yaml:3:1`} {
		if !strings.Contains(a.body, want) {
			t.Errorf("policy page lacks %s:\n%s", want, a.body)
		}
	}
}

func TestMoney(t *testing.T) {
	for micros, want := range map[int64]string{
		0: "$0.000000", 216: "$0.000216", 9_999: "$0.009999", 10_000: "$0.01", 41_666_666: "$41.67",
		1_000_000_000: "$1,000.00", -2_500_000: "-$2.50", 123_456_789_012: "$123,456.79",
	} {
		if got := money(micros); got != want {
			t.Errorf("money(%d) = %q, want %q", micros, got, want)
		}
	}
}

// TestProviderProbes: each provider's card shows what the capability
// probes found of its models, failing ones marked, and a provider
// without probes shows none.
func TestProviderProbes(t *testing.T) {
	r := newRig(t)
	cookie, _ := r.signIn()
	at := r.now.Add(-time.Minute)
	r.f.probes = func() []probe.Record {
		return []probe.Record{{Provider: "openai", Ran: at, Day: "2026-12-05", SpentMicros: 420, CapMicros: 10_000, Models: []probe.ModelResults{{
			Model: "small",
			Capabilities: []probe.Result{
				{Capability: "tools", Verdict: probe.Failing, Since: at, Last: "failed", Detail: "status 400: does not support tools", At: at},
				{Capability: "vision", Verdict: probe.Passing, Since: at, Last: "passed", At: at},
			},
		}}}}
	}
	a := r.do("GET", "/console/providers", withCookie(cookie), "")
	if a.status != 200 {
		t.Fatalf("%d:\n%s", a.status, a.body)
	}
	openai, anthropic, _ := strings.Cut(a.body[strings.Index(a.body, `id="provider-openai"`):], `id="provider-anthropic"`)
	for _, want := range []string{
		`data-model="small" data-capability="tools" data-verdict="failing"`,
		`data-model="small" data-capability="vision" data-verdict="passing"`,
		"status 400: does not support tools",
		"$0.000420 of $0.010000 spent on 2026-12-05",
	} {
		if !strings.Contains(openai, want) {
			t.Errorf("openai's card lacks %q:\n%s", want, openai)
		}
	}
	if strings.Contains(anthropic, `class="probes"`) {
		t.Errorf("anthropic's card shows probes it does not have:\n%s", anthropic)
	}
}
