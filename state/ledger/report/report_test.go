package report

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/ledger/ledgertest"
)

var t0 = ledgertest.T0

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
		{name: "session and tags", raw: "session=run-1&tag=team:search&tag=env:prod%3Aeu",
			want: ledger.Filter{Session: "run-1", Tags: map[string]string{"team": "search", "env": "prod:eu"}}},
		{name: "a tag without a value", raw: "tag=team", wantErr: true, wantParam: "tag"},
		{name: "a bad tag", raw: "tag=cost%20center:1", wantErr: true, wantParam: "tag"},
		{name: "a tag twice", raw: "tag=team:a&tag=team:b", wantErr: true, wantParam: "tag"},
		{name: "key outside a view by tag", raw: "key=team", wantErr: true, wantParam: "key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQuery(tt.raw)
			if tt.wantErr {
				var oe *openaiapi.Error
				if !errors.As(err, &oe) || oe.Status != http.StatusBadRequest || oe.Param != tt.wantParam {
					t.Fatalf("got %v, want a 400 naming %q", err, tt.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.From.Equal(tt.want.From) || !got.To.Equal(tt.want.To) || got.Tenant != tt.want.Tenant || got.App != tt.want.App || got.Model != tt.want.Model ||
				got.Session != tt.want.Session || !maps.Equal(got.Tags, tt.want.Tags) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseTagQuery(t *testing.T) {
	tests := []struct {
		name, raw, wantKey string
		wantParam          string // of a refusal
	}{
		{name: "a key", raw: "key=team&tenant=acme", wantKey: "team"},
		{name: "with tag filters", raw: "key=feature&tag=team:search", wantKey: "feature"},
		{name: "no key", raw: "tenant=acme", wantParam: "key"},
		{name: "a bad key", raw: "key=a%20b", wantParam: "key"},
		{name: "two keys", raw: "key=a&key=b", wantParam: "key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, key, err := ParseTagQuery(tt.raw)
			if tt.wantParam != "" {
				var oe *openaiapi.Error
				if !errors.As(err, &oe) || oe.Status != http.StatusBadRequest || oe.Param != tt.wantParam {
					t.Fatalf("got %v, want a 400 naming %q", err, tt.wantParam)
				}
				return
			}
			if err != nil || key != tt.wantKey {
				t.Errorf("got %q, %v; want %q", key, err, tt.wantKey)
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
			var oe *openaiapi.Error
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

// TestReportIncludesQueuedRecords: records still in the writer's queue are
// in the report, and its figures are the sums of the rows.
func TestReportIncludesQueuedRecords(t *testing.T) {
	db, w := ledgertest.WithWriter(t)
	for _, r := range ledgertest.Records {
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
			{Group: ledger.Group{App: "batch"}, Totals: ledger.Totals{Requests: 1, InputTokens: 20, OutputTokens: 8, CachedTokens: 4, CostMicros: 1300}, CostUSD: "0.001300", SavedUSD: "0.000000"},
			{Group: ledger.Group{App: "web"}, Totals: ledger.Totals{Requests: 2, Errors: 1, InputTokens: 10, OutputTokens: 5, CostMicros: 700}, CostUSD: "0.000700", SavedUSD: "0.000000"},
		},
		Total: Row{Totals: ledger.Totals{Requests: 3, Errors: 1, InputTokens: 30, OutputTokens: 13, CachedTokens: 4, CostMicros: 2000}, CostUSD: "0.002000", SavedUSD: "0.000000"},
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

// TestReportShowsWhatTheCacheSaved: response cache answers (provider
// "cache") cost nothing and report what they saved, per row and in total.
func TestReportShowsWhatTheCacheSaved(t *testing.T) {
	db, w := ledgertest.WithWriter(t)
	for _, r := range []ledger.Record{
		{RequestID: "miss", Time: t0, Tenant: "acme", ServedModel: "gpt", Provider: "openai", Status: 200, InputTokens: 10, OutputTokens: 5, CostMicros: 700},
		{RequestID: "hit1", Time: t0.Add(time.Second), Tenant: "acme", ServedModel: "gpt", Provider: "cache", Status: 200, InputTokens: 10, OutputTokens: 5, SavedMicros: 700},
		{RequestID: "hit2", Time: t0.Add(2 * time.Second), Tenant: "acme", ServedModel: "gpt", Provider: "cache", Status: 200, InputTokens: 10, OutputTokens: 5, SavedMicros: 700},
		{RequestID: "other", Time: t0, Tenant: "acme", ServedModel: "claude", Provider: "anthropic", Status: 200, InputTokens: 1, OutputTokens: 1, CostMicros: 30},
	} {
		w.Write(r)
	}
	rep, err := Source{Writer: w, Ledger: db}.Report(context.Background(), ledger.Filter{Tenant: "acme"}, ledger.ByModel)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Group: ledger.Group{Model: "claude"}, Totals: ledger.Totals{Requests: 1, InputTokens: 1, OutputTokens: 1, CostMicros: 30}, CostUSD: "0.000030", SavedUSD: "0.000000"},
		{Group: ledger.Group{Model: "gpt"}, Totals: ledger.Totals{Requests: 3, InputTokens: 30, OutputTokens: 15, CostMicros: 700, SavedMicros: 1400}, CostUSD: "0.000700", SavedUSD: "0.001400"},
	}
	if diff := cmp.Diff(want, rep.Data); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if rep.Total.SavedMicros != 1400 || rep.Total.SavedUSD != "0.001400" || rep.Total.CostMicros != 730 {
		t.Errorf("total %+v; want 730 micro-USD spent, 1400 saved", rep.Total)
	}
}

func TestReportOfAClosedLedgerIsRefused(t *testing.T) {
	db, w := ledgertest.WithWriter(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Source{Writer: w, Ledger: db}.Report(context.Background(), ledger.Filter{})
	var oe *openaiapi.Error
	if !errors.As(err, &oe) || oe.Status != http.StatusServiceUnavailable {
		t.Errorf("got %v, want 503", err)
	}
	if _, err := (Source{}).Report(context.Background(), ledger.Filter{}); !errors.As(err, &oe) || oe.Status != http.StatusServiceUnavailable {
		t.Errorf("without a ledger: got %v, want 503", err)
	}
}
