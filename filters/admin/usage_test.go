package admin

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/ledger/report"
)

const usagePolicy = `
gateway:
  # sha256("sk-local-admin")
  admin_key_sha256: dd64c8e8eaafa1abb74fd2a2ccad64f4dcb9f2bd6fae158f50e000958395a29e
routes:
  - {name: admin, path: /admin, api: admin}
`

// TestUsageAPI asks the admin usage API for each grouping and checks the
// figures are the sums of the ledger rows, records still queued included.
func TestUsageAPI(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(usagePolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := ledger.OpenSQLite(ctx, filepath.Join(t.TempDir(), "usage.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	w := ledger.NewWriter(db, ledger.WriterOptions{FlushInterval: time.Hour})
	t.Cleanup(func() { _ = w.Close(ctx); _ = db.Close() })
	t0 := time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)
	for i, r := range []ledger.Record{
		{Tenant: "acme", App: "web", ServedModel: "gpt", Status: 200, InputTokens: 10, OutputTokens: 5, CostMicros: 700, Tags: map[string]string{"team": "search"}, SessionID: "s1"},
		{Tenant: "acme", App: "batch", ServedModel: "claude", Status: 200, InputTokens: 20, OutputTokens: 8, CostMicros: 1300, Tags: map[string]string{"team": "ads"}},
		{Tenant: "globex", App: "web", RequestedModel: "gpt", Status: 402, ErrorType: "budget", Tags: map[string]string{"team": "search"}},
		{Tenant: "globex", App: "web", ServedModel: "gpt", Status: 200, InputTokens: 1, OutputTokens: 1, CostMicros: 12, Tags: map[string]string{"team": "search"}},
	} {
		r.RequestID, r.Time = string(rune('a'+i)), t0.Add(time.Duration(i)*time.Minute)
		w.Write(r)
	}
	fl, err := New(policy.FilterRef{Name: "admin"}, filters.Deps{Policy: p, Ledger: w, Usage: db})
	if err != nil {
		t.Fatal(err)
	}
	f := fl.(*Filter)
	row := func(g ledger.Group, requests, errors, in, out, cost int64) report.Row {
		return report.Row{Group: g, Totals: ledger.Totals{Requests: requests, Errors: errors, InputTokens: in, OutputTokens: out, CostMicros: cost}, CostUSD: report.USD(cost), SavedUSD: report.USD(0)}
	}
	tests := []struct {
		name       string
		path       string
		query      string
		wantStatus int
		wantRows   []report.Row
	}{
		{name: "by tenant", path: "/admin/usage/by-tenant", wantStatus: 200, wantRows: []report.Row{
			row(ledger.Group{Tenant: "acme"}, 2, 0, 30, 13, 2000),
			row(ledger.Group{Tenant: "globex"}, 2, 1, 1, 1, 12),
		}},
		{name: "by app, one tenant", path: "/admin/usage/by-app", query: "tenant=acme", wantStatus: 200, wantRows: []report.Row{
			row(ledger.Group{Tenant: "acme", App: "batch"}, 1, 0, 20, 8, 1300),
			row(ledger.Group{Tenant: "acme", App: "web"}, 1, 0, 10, 5, 700),
		}},
		{name: "by model in a range", path: "/admin/usage/by-model", query: "from=2026-05-06T07:02:00Z", wantStatus: 200, wantRows: []report.Row{
			row(ledger.Group{Model: "gpt"}, 2, 1, 1, 1, 12),
		}},
		{name: "by tag, per tenant", path: "/admin/usage/by-tag", query: "key=team", wantStatus: 200, wantRows: []report.Row{
			row(ledger.Group{Tenant: "acme", Tag: "ads"}, 1, 0, 20, 8, 1300),
			row(ledger.Group{Tenant: "acme", Tag: "search"}, 1, 0, 10, 5, 700),
			row(ledger.Group{Tenant: "globex", Tag: "search"}, 2, 1, 1, 1, 12),
		}},
		{name: "by session, of a tag's requests", path: "/admin/usage/by-session", query: "tag=team:search", wantStatus: 200, wantRows: []report.Row{
			row(ledger.Group{Tenant: "acme", Session: "s1"}, 1, 0, 10, 5, 700),
			row(ledger.Group{Tenant: "globex"}, 2, 1, 1, 1, 12),
		}},
		{name: "by tag without its key", path: "/admin/usage/by-tag", wantStatus: 400},
		{name: "bad range", path: "/admin/usage/by-model", query: "to=soon", wantStatus: 400},
		{name: "unknown grouping", path: "/admin/usage/by-planet", wantStatus: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := &filters.Exchange{ID: "r", Policy: p, Route: p.Routes[0], Method: "GET", Path: tt.path, Query: tt.query}
			err := f.RequestBody(ctx, x)
			if tt.wantStatus != 200 {
				if err == nil || filters.AsError(err, "r").Status != tt.wantStatus {
					t.Fatalf("got %v, want %d", err, tt.wantStatus)
				}
				return
			}
			reply := x.TakeReply()
			var rep report.Report
			if err != nil || reply == nil || json.Unmarshal(reply.Body, &rep) != nil {
				t.Fatalf("err %v, reply %+v", err, reply)
			}
			if diff := cmp.Diff(tt.wantRows, rep.Data); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}
