package report

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/openai"
	"github.com/switchyard/switchyard/filters/usage/ledger"
)

var t0 = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

func TestParseQuery(t *testing.T) {
	tests := []struct {
		name      string
		raw       string
		want      ledger.Filter
		wantParam string // the parameter a refusal names; "" for none
		wantErr   bool
	}{
		{name: "empty", raw: "", want: ledger.Filter{}},
		{
			name: "range and filters",
			raw:  "from=2026-05-06T07:00:00Z&to=2026-05-06T08:00:00.5%2B01:00&tenant=acme&app=web&model=gpt-4o",
			want: ledger.Filter{From: t0, To: time.Date(2026, 5, 6, 8, 0, 0, 500_000_000, time.FixedZone("", 3600)), Tenant: "acme", App: "web", Model: "gpt-4o"},
		},
		{name: "not RFC 3339", raw: "from=yesterday", wantErr: true, wantParam: "from"},
		{name: "to before from", raw: "from=2026-05-06T07:00:00Z&to=2026-05-06T06:00:00Z", wantErr: true, wantParam: "to"},
		{name: "empty range", raw: "from=2026-05-06T07:00:00Z&to=2026-05-06T07:00:00Z", wantErr: true, wantParam: "to"},
		{name: "unknown parameter", raw: "tenat=acme", wantErr: true, wantParam: "tenat"},
		{name: "given twice", raw: "tenant=a&tenant=b", wantErr: true, wantParam: "tenant"},
		{name: "bad escape", raw: "tenant=%zz", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQuery(tt.raw)
			if tt.wantErr {
				var oe *openai.Error
				if !errors.As(err, &oe) || oe.Status != http.StatusBadRequest || oe.Param != tt.wantParam {
					t.Fatalf("got %v, want a 400 naming %q", err, tt.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.From.Equal(tt.want.From) || !got.To.Equal(tt.want.To) || got.Tenant != tt.want.Tenant || got.App != tt.want.App || got.Model != tt.want.Model {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "from=2026-05-06T07:00:00Z&tenant=a", "to=x", "a=b&a=c", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseQuery(raw)
		if err != nil {
			var oe *openai.Error
			if !errors.As(err, &oe) || oe.Status != http.StatusBadRequest {
				t.Fatalf("ParseQuery(%q): %v, want a 400", raw, err)
			}
			return
		}
		if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
			t.Fatalf("ParseQuery(%q) accepted an empty range %v..%v", raw, q.From, q.To)
		}
	})
}

func TestUSD(t *testing.T) {
	tests := []struct {
		name   string
		micros int64
		want   string
	}{
		{"zero", 0, "0.000000"},
		{"one micro-dollar", 1, "0.000001"},
		{"dollars and cents", 12_340_000, "12.340000"},
		{"negative", -1_500_001, "-1.500001"},
	}
	for _, tt := range tests {
		if got := USD(tt.micros); got != tt.want {
			t.Errorf("%s: USD(%d) = %q, want %q", tt.name, tt.micros, got, tt.want)
		}
	}
}

// ledgerWithWriter opens a SQLite ledger and a writer whose flush interval
// is long enough that only an explicit flush writes.
func ledgerWithWriter(t *testing.T) (*ledger.DB, *ledger.Writer) {
	t.Helper()
	db, err := ledger.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "usage.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewWriter(db, ledger.WriterOptions{FlushInterval: time.Hour, BatchSize: 1000})
	t.Cleanup(func() {
		_ = w.Close(context.Background())
		_ = db.Close()
	})
	return db, w
}

var records = []ledger.Record{
	{RequestID: "a", Time: t0, Tenant: "acme", App: "web", KeyName: "acme-web", ServedModel: "gpt", Status: 200, InputTokens: 10, OutputTokens: 5, CostMicros: 700},
	{RequestID: "b", Time: t0.Add(time.Minute), Tenant: "acme", App: "batch", KeyName: "acme-batch", ServedModel: "claude", Status: 200, InputTokens: 20, OutputTokens: 8, CachedTokens: 4, CostMicros: 1300},
	{RequestID: "c", Time: t0.Add(2 * time.Minute), Tenant: "acme", App: "web", KeyName: "acme-web", RequestedModel: "gpt", Status: 429, ErrorType: "rate_limit_error"},
	{RequestID: "d", Time: t0.Add(3 * time.Minute), Tenant: "globex", App: "web", KeyName: "g", ServedModel: "gpt", Status: 200, InputTokens: 1, OutputTokens: 1, CostMicros: 12},
}

// TestReportIncludesQueuedRecords: records still in the writer's queue are
// in the report, and its figures are the sums of the rows.
func TestReportIncludesQueuedRecords(t *testing.T) {
	db, w := ledgerWithWriter(t)
	for _, r := range records {
		w.Write(r)
	}
	src := Source{Writer: w, Ledger: db}
	rep, err := src.Report(context.Background(), ledger.Filter{Tenant: "acme"}, ledger.ByApp)
	if err != nil {
		t.Fatal(err)
	}
	want := &Report{
		Object: "usage", Tenant: "acme", GroupBy: []ledger.Dimension{ledger.ByApp},
		Data: []Row{
			{Group: ledger.Group{App: "batch"}, Totals: ledger.Totals{Requests: 1, InputTokens: 20, OutputTokens: 8, CachedTokens: 4, CostMicros: 1300}, CostUSD: "0.001300"},
			{Group: ledger.Group{App: "web"}, Totals: ledger.Totals{Requests: 2, Errors: 1, InputTokens: 10, OutputTokens: 5, CostMicros: 700}, CostUSD: "0.000700"},
		},
		Total: Row{Totals: ledger.Totals{Requests: 3, Errors: 1, InputTokens: 30, OutputTokens: 13, CachedTokens: 4, CostMicros: 2000}, CostUSD: "0.002000"},
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	var sum ledger.Totals
	for r, err := range db.Records(context.Background(), ledger.Filter{Tenant: "acme"}) {
		if err != nil {
			t.Fatal(err)
		}
		sum.Add(&r)
	}
	if sum != rep.Total.Totals {
		t.Errorf("report total %+v, sum of the ledger rows %+v", rep.Total.Totals, sum)
	}
}

func TestReportOfAClosedLedgerIsRefused(t *testing.T) {
	db, w := ledgerWithWriter(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Source{Writer: w, Ledger: db}.Report(context.Background(), ledger.Filter{})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.Status != http.StatusServiceUnavailable {
		t.Errorf("got %v, want 503", err)
	}
	if _, err := (Source{}).Report(context.Background(), ledger.Filter{}); !errors.As(err, &oe) || oe.Status != http.StatusServiceUnavailable {
		t.Errorf("without a ledger: got %v, want 503", err)
	}
}

const filterPolicy = `
routes:
  - {name: usage, path: /v1/usage, api: usage}
tenants:
  - {name: acme}
  - {name: globex}
`

// TestTenantReadsOnlyItsOwnUsage drives the usage_report filter as the
// chain would after auth.
func TestTenantReadsOnlyItsOwnUsage(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(filterPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	db, w := ledgerWithWriter(t)
	for _, r := range records {
		w.Write(r)
	}
	fl, err := New(policy.FilterRef{Name: "usage_report"}, filters.Deps{Policy: p, Ledger: w, Usage: db})
	if err != nil {
		t.Fatal(err)
	}
	var acme *policy.Tenant
	for _, tn := range p.Tenants {
		if tn.Name == "acme" {
			acme = tn
		}
	}
	tests := []struct {
		name       string
		method     string
		path       string
		query      string
		wantStatus int
		wantGroups []string // the groups' names, in order
		wantCost   int64
	}{
		{name: "totals", method: "GET", path: "/v1/usage", wantStatus: 200, wantGroups: []string{""}, wantCost: 2000},
		{name: "by app", method: "GET", path: "/v1/usage/by-app", wantStatus: 200, wantGroups: []string{"batch", "web"}, wantCost: 2000},
		{name: "by model", method: "GET", path: "/v1/usage/by-model", wantStatus: 200, wantGroups: []string{"claude", "gpt"}, wantCost: 2000},
		{name: "by key", method: "GET", path: "/v1/usage/by-key", wantStatus: 200, wantGroups: []string{"acme-batch", "acme-web"}, wantCost: 2000},
		{name: "time range", method: "GET", path: "/v1/usage", query: "from=2026-05-06T07:01:00Z&to=2026-05-06T07:02:00Z", wantStatus: 200, wantGroups: []string{""}, wantCost: 1300},
		{name: "own tenant named", method: "GET", path: "/v1/usage", query: "tenant=acme", wantStatus: 200, wantGroups: []string{""}, wantCost: 2000},
		{name: "another tenant named", method: "GET", path: "/v1/usage", query: "tenant=globex", wantStatus: 403},
		{name: "unknown view", method: "GET", path: "/v1/usage/by-tenant", wantStatus: 404},
		{name: "not GET", method: "POST", path: "/v1/usage", wantStatus: 405},
		{name: "bad query", method: "GET", path: "/v1/usage", query: "from=now", wantStatus: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := &filters.Exchange{ID: "r", Policy: p, Route: p.Routes[0], Method: tt.method, Path: tt.path, Query: tt.query,
				Caller: filters.Caller{Tenant: acme, KeyName: "acme-web"}}
			err := fl.(filters.RequestHeadersHook).RequestHeaders(context.Background(), x)
			if tt.wantStatus != 200 {
				if got := filters.AsError(err, "r").Status; err == nil || got != tt.wantStatus {
					t.Fatalf("got %v, want %d", err, tt.wantStatus)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			reply := x.TakeReply()
			var rep Report
			if reply == nil || reply.Status != 200 || json.Unmarshal(reply.Body, &rep) != nil {
				t.Fatalf("reply %+v", reply)
			}
			var groups []string
			for _, r := range rep.Data {
				groups = append(groups, r.App+r.Model+r.Key)
			}
			if diff := cmp.Diff(tt.wantGroups, groups); diff != "" || rep.Tenant != "acme" || rep.Total.CostMicros != tt.wantCost {
				t.Errorf("tenant %q, cost %d (want %d), groups (-want +got):\n%s", rep.Tenant, rep.Total.CostMicros, tt.wantCost, diff)
			}
		})
	}
}
