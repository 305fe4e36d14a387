package usagereport

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/ledger/ledgertest"
	"github.com/switchyard/switchyard/state/ledger/report"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/store"
)

// TestTenantReadsOnlyItsOwnUsage drives the usage_report filter as the
// chain would after auth.
func TestTenantReadsOnlyItsOwnUsage(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(filterPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	db, w := ledgertest.WithWriter(t)
	for _, r := range ledgertest.Records {
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
		{name: "by tag: the untagged first", method: "GET", path: "/v1/usage/by-tag", query: "key=team", wantStatus: 200, wantGroups: []string{"", "ads", "search"}, wantCost: 2000},
		{name: "by tag, of one tag's requests", method: "GET", path: "/v1/usage/by-tag", query: "key=feature&tag=team:ads", wantStatus: 200, wantGroups: []string{"summarize"}, wantCost: 1300},
		{name: "by session", method: "GET", path: "/v1/usage/by-session", wantStatus: 200, wantGroups: []string{"", "s1"}, wantCost: 2000},
		{name: "one session", method: "GET", path: "/v1/usage", query: "session=s1", wantStatus: 200, wantGroups: []string{""}, wantCost: 700},
		{name: "by tag without its key", method: "GET", path: "/v1/usage/by-tag", wantStatus: 400},
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
			var rep report.Report
			if reply == nil || reply.Status != 200 || json.Unmarshal(reply.Body, &rep) != nil {
				t.Fatalf("reply %+v", reply)
			}
			var groups []string
			for _, r := range rep.Data {
				groups = append(groups, r.App+r.Model+r.Key+r.Tag+r.Session)
			}
			if diff := cmp.Diff(tt.wantGroups, groups); diff != "" || rep.Tenant != "acme" || rep.Total.CostMicros != tt.wantCost {
				t.Errorf("tenant %q, cost %d (want %d), groups (-want +got):\n%s", rep.Tenant, rep.Total.CostMicros, tt.wantCost, diff)
			}
		})
	}
}

// TestQualityReportsTheTenantsDomains: /v1/usage/quality adds what the
// learning routes know of the caller's tenant's domains, and of no other
// tenant's, narrowed by app.
func TestQualityReportsTheTenantsDomains(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(filterPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	db, w := ledgertest.WithWriter(t)
	learner := priors.New(store.NewMemory(store.Options{}), nil, nil)
	r, err := learner.Track("chat", priors.Config{Curve: []float64{0.75, 1}, HalfLife: time.Hour, MaxDomains: 10, PriorWeight: 8})
	if err != nil {
		t.Fatal(err)
	}
	for tenant, apps := range map[string][]string{"acme": {"web", "batch"}, "globex": {"web"}} {
		for i, app := range apps {
			for range 10 * (i + 1) {
				r.Domain(tenant, app, 7).Routed(true)
			}
			learner.Rate("chat", tenant, app, 7, 0.5, 0.25, "judge")
		}
	}
	learner.Refresh(context.Background())
	fl, err := New(policy.FilterRef{Name: "usage_report"}, filters.Deps{Policy: p, Ledger: w, Usage: db, Priors: learner})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		query string
		want  []string // app/requests
	}{{"", []string{"batch/20", "web/10"}}, {"app=web", []string{"web/10"}}} {
		x := &filters.Exchange{ID: "r", Policy: p, Route: p.Routes[0], Method: "GET", Path: "/v1/usage/quality", Query: tt.query,
			Caller: filters.Caller{Tenant: p.Tenants[0], KeyName: "acme-web"}}
		if err := fl.(filters.RequestHeadersHook).RequestHeaders(context.Background(), x); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Object  string                `json:"object"`
			Domains []priors.DomainReport `json:"domains"`
		}
		if err := json.Unmarshal(x.TakeReply().Body, &got); err != nil {
			t.Fatal(err)
		}
		var apps []string
		for _, d := range got.Domains {
			if d.Tenant != "acme" || d.Route != "chat" || d.Verdicts != 1 || d.StrongShare != 1 || d.Domain != "0000000000000007" {
				t.Errorf("%s: domain %+v", tt.query, d)
			}
			apps = append(apps, d.App+"/"+strconv.FormatFloat(d.Requests, 'g', -1, 64))
		}
		if diff := cmp.Diff(tt.want, apps); diff != "" || got.Object != "usage.quality" {
			t.Errorf("%s: object %q, domains (-want +got):\n%s", tt.query, got.Object, diff)
		}
	}
}

const filterPolicy = `
routes:
  - {name: usage, path: /v1/usage, api: usage}
tenants:
  - {name: acme}
  - {name: globex}
`
