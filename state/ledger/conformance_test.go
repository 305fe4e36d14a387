package ledger

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// genRecords makes n varied records, the same for the same seed: three
// tenants, their apps, three models, refusals, failures and fallbacks, one
// every ~40 seconds from t0 with sub-microsecond noise.
func genRecords(n int, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	tenants := []string{"acme", "globex", "initech"}
	apps := []string{"web", "batch", ""}
	models := [][2]string{{"gpt-4o", "openai"}, {"claude-sonnet", "anthropic"}, {"gemini-flash", "gemini"}}
	teams, features := []string{"search", "ads", "infra"}, []string{"summarize", "chat"}
	out := make([]Record, n)
	for i := range out {
		m := models[rng.IntN(len(models))]
		r := Record{
			RequestID: fmt.Sprintf("req-%d-%06d", seed, i),
			Time:      t0.Add(time.Duration(i)*40*time.Second + time.Duration(rng.IntN(1_000_000_000))),
			Tenant:    tenants[rng.IntN(len(tenants))], App: apps[rng.IntN(len(apps))],
			KeyName: "key-" + apps[rng.IntN(len(apps))], Route: "chat",
			RequestedModel: m[0], ServedModel: m[0], Provider: m[1],
			Stream: rng.IntN(2) == 0, Attempts: 1, Status: 200,
			InputTokens: int64(rng.IntN(5000)), OutputTokens: int64(rng.IntN(2000)),
			CachedTokens: int64(rng.IntN(500)), CostMicros: int64(rng.IntN(90_000)),
			Latency:          time.Duration(rng.IntN(5_000_000_000)),
			TimeToFirstToken: time.Duration(rng.IntN(900_000_000)),
			PriceSource:      []string{"catalog", "pattern", "estimated"}[rng.IntN(3)],
		}
		switch rng.IntN(10) {
		case 0: // refused before any attempt
			r.ServedModel, r.Provider, r.Attempts, r.PriceSource = "", "", 0, ""
			r.Status, r.ErrorType = 429, "rate_limit_exceeded"
			r.InputTokens, r.OutputTokens, r.CachedTokens, r.CostMicros, r.TimeToFirstToken = 0, 0, 0, 0, 0
		case 1: // every attempt failed
			r.Attempts, r.Status, r.ErrorType = 2, 503, "upstream_unavailable"
			r.FallbackReasons = []string{"timeout", "5xx"}
			r.OutputTokens, r.CostMicros, r.TimeToFirstToken = 0, 0, 0
		case 2: // served by the fallback
			r.Attempts, r.FallbackReasons = 2, []string{"429"}
			r.ServedModel, r.Provider = "claude-sonnet", "anthropic"
		case 3:
			r.CacheHit, r.CostMicros = true, 0
		case 4: // a stream the client cut short
			r.Status, r.ErrorType, r.UsageEstimated = 499, "client_disconnected", true
		case 5: // answered by the response cache: free, and saving its price
			r.Provider, r.SavedMicros, r.CostMicros = "cache", r.CostMicros+1, 0
		case 6: // traced
			r.TraceID = fmt.Sprintf("%032x", rng.Uint64())
		}
		// Most requests carry tags, some none; a team, and a feature on
		// some; a few sessions.
		switch rng.IntN(4) {
		case 0:
		case 1:
			r.Tags = map[string]string{"team": teams[rng.IntN(len(teams))]}
		default:
			r.Tags = map[string]string{"team": teams[rng.IntN(len(teams))], "feature": features[rng.IntN(len(features))]}
		}
		if rng.IntN(3) == 0 {
			r.SessionID = fmt.Sprintf("session-%d", rng.IntN(5))
		}
		out[i] = r
	}
	return out
}

func normalizedAll(rs []Record) []Record {
	out := make([]Record, len(rs))
	for i := range rs {
		out[i] = rs[i].normalized()
	}
	return out
}

func readAll(t *testing.T, l Ledger, f Filter) []Record {
	t.Helper()
	var out []Record
	for r, err := range l.Records(t.Context(), f) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestInsertRoundTrip(t *testing.T) {
	forEachEngine(t, func(t *testing.T, _ engine, cfg Config) {
		db := mustOpen(t, cfg)
		paris := time.FixedZone("CET", 3600)
		in := []Record{
			{
				RequestID: "full", Time: time.Date(2026, 3, 1, 12, 0, 0, 123_456_789, paris),
				Tenant: "acme", App: "web", KeyName: "acme-web", Route: "chat",
				RequestedModel: "gpt-4o", ServedModel: "claude-sonnet", Provider: "anthropic",
				Stream: true, Attempts: 2, FallbackReasons: []string{"429", "breaker_open"},
				InputTokens: 1200, OutputTokens: 340, CachedTokens: 1000, CostMicros: 9_876_543_210,
				Latency: 1234567891 * time.Nanosecond, TimeToFirstToken: 98765432 * time.Nanosecond,
				Status: 200, CacheHit: true, StrongCostMicros: 12_345_678_901, SavedMicros: 8_765_432_109,
				TraceID:     "4bf92f3577b34da6a3ce929d0e0e4736",
				RouteReason: "fallback: claude-sonnet after gpt-4o",
				Tags:        map[string]string{"team": "search", "cost-center": "4711", "env": "prod"},
				SessionID:   "d9194fc7-8693-41a9-87d3-22c2adba20dc",
				Domain:      "00c0ffee0badf00d", RoutingScore: 0.6180339887498949,
			},
			{RequestID: "bare", Time: t0},
			{
				RequestID: "hostile", Time: t0.Add(time.Second), Tenant: "acme",
				RequestedModel: "gpt\x00-4o\xff", ErrorType: strings.Repeat("é", 200),
				FallbackReasons: []string{"a\x00b"}, Status: 400,
			},
		}
		n, err := db.Insert(t.Context(), in)
		if err != nil || n != len(in) {
			t.Fatalf("Insert: got %d, %v; want %d, nil", n, err, len(in))
		}
		want := map[string]Record{}
		for _, r := range normalizedAll(in) {
			want[r.RequestID] = r
		}
		if h := want["hostile"]; h.RequestedModel != "gpt-4o\uFFFD" || len(h.ErrorType) > maxText || h.FallbackReasons[0] != "ab" {
			t.Fatalf("normalized hostile record: got %+v", h)
		}
		got := map[string]Record{}
		for _, r := range readAll(t, db, Filter{}) {
			got[r.RequestID] = r
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("records read back (-want +got):\n%s", d)
		}
	})
}

func TestInsertIsIdempotent(t *testing.T) {
	forEachEngine(t, func(t *testing.T, _ engine, cfg Config) {
		db := mustOpen(t, cfg)
		rs := genRecords(20, 1)
		dup := rs[3]
		dup.CostMicros = 1 // a retry never changes the row already there
		// nor its tags: not the row's, nor those the usage API reads
		dup.Tags = map[string]string{"team": "intruder", "added": "yes"}
		steps := []struct {
			name      string
			batch     []Record
			want      int
			wantTotal int64
		}{
			{"first write", rs[:10], 10, 10},
			{"same batch again", rs[:10], 0, 10},
			{"overlapping batch", rs[5:15], 5, 15},
			{"duplicates inside one batch", []Record{rs[15], rs[15], rs[16]}, 2, 17},
			{"changed duplicate", []Record{dup}, 0, 17},
			{"empty batch", nil, 0, 17},
		}
		for _, s := range steps {
			n, err := db.Insert(t.Context(), s.batch)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if n != s.want {
				t.Errorf("%s: got %d new, want %d", s.name, n, s.want)
			}
			if got := count(t, db); got != s.wantTotal {
				t.Errorf("%s: got %d rows, want %d", s.name, got, s.wantTotal)
			}
		}
		got := readAll(t, db, Filter{Tenant: rs[3].Tenant})
		for _, r := range got {
			if r.RequestID == rs[3].RequestID && (r.CostMicros != rs[3].CostMicros || !maps.Equal(r.Tags, rs[3].Tags)) {
				t.Errorf("row %s: got cost %d and tags %v, want the first write's %d and %v", r.RequestID, r.CostMicros, r.Tags, rs[3].CostMicros, rs[3].Tags)
			}
		}
		for _, key := range []string{"team", "added"} {
			rows, err := db.Query(t.Context(), Filter{RequestID: dup.RequestID}, ByTag(key))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].Tag != rs[3].Tags[key] {
				t.Errorf("the request by tag %s: %+v, want the first write's %q", key, rows, rs[3].Tags[key])
			}
		}
	})
}

func TestInsertRefusalWritesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, _ engine, cfg Config) {
		db := mustOpen(t, cfg)
		rs := genRecords(3, 2)
		rs[2].RequestID = ""
		_, err := db.Insert(t.Context(), rs)
		if err == nil || errors.Is(err, ErrUnavailable) {
			t.Fatalf("Insert with a record without ID: got %v, want a refusal that is not ErrUnavailable", err)
		}
		if got := count(t, db); got != 0 {
			t.Errorf("got %d rows, want 0: a refused batch writes nothing", got)
		}
	})
}

// TestQueryEqualsSumOfRows checks every usage figure against two sums: one
// over the records as the test made them, one over the rows the ledger
// returns for the same filter.
func TestQueryEqualsSumOfRows(t *testing.T) {
	rs := genRecords(1300, 3) // more than two INSERT statements' worth
	forEachEngine(t, func(t *testing.T, _ engine, cfg Config) {
		db := mustOpen(t, cfg)
		if _, err := db.Insert(t.Context(), rs); err != nil {
			t.Fatal(err)
		}
		last := rs[len(rs)-1].Time
		mid := rs[600].Time // a bound that falls exactly on a record
		tests := []struct {
			name string
			f    Filter
			by   []Dimension
		}{
			{"everything", Filter{}, nil},
			{"by tenant", Filter{}, []Dimension{ByTenant}},
			{"by tenant and app", Filter{}, []Dimension{ByTenant, ByApp}},
			{"by model", Filter{}, []Dimension{ByModel}},
			{"by model and provider", Filter{}, []Dimension{ByModel, ByProvider}},
			{"by key and route", Filter{}, []Dimension{ByKey, ByRoute}},
			{"from a record's time", Filter{From: mid}, []Dimension{ByTenant}},
			{"to a record's time", Filter{To: mid}, []Dimension{ByTenant}},
			{"an hour", Filter{From: t0.Add(2 * time.Hour), To: t0.Add(3 * time.Hour)}, []Dimension{ByModel}},
			{"one tenant", Filter{Tenant: "acme"}, []Dimension{ByApp}},
			{"one tenant's app in a range", Filter{From: mid, To: last, Tenant: "globex", App: "web"}, []Dimension{ByModel}},
			{"one model", Filter{Model: "gpt-4o"}, []Dimension{ByTenant}},
			{"refusals count under the requested model", Filter{Model: "gemini-flash"}, nil},
			{"nothing in range", Filter{From: last.Add(time.Hour)}, []Dimension{ByTenant}},
			{"nothing in range, ungrouped", Filter{From: last.Add(time.Hour)}, nil},
			{"unknown tenant", Filter{Tenant: "nobody"}, nil},
			{"by a tag", Filter{}, []Dimension{ByTag("team")}},
			{"by tenant and a tag", Filter{}, []Dimension{ByTenant, ByTag("feature")}},
			{"by a tag no request has", Filter{}, []Dimension{ByTag("nobody")}},
			{"by session", Filter{}, []Dimension{BySession}},
			{"one tag", Filter{Tags: map[string]string{"team": "ads"}}, []Dimension{ByModel}},
			{"two tags, by a third dimension", Filter{Tags: map[string]string{"team": "ads", "feature": "chat"}}, []Dimension{ByTenant}},
			{"a tag, by that tag", Filter{Tags: map[string]string{"team": "ads"}}, []Dimension{ByTag("team")}},
			{"one session of a tenant in a range", Filter{From: mid, Tenant: "acme", Session: "session-1"}, []Dimension{ByTag("team")}},
			{"sub-microsecond bound", Filter{From: rs[10].Time.Add(-time.Nanosecond), To: rs[10].Time.Add(time.Nanosecond)}, nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := db.Query(t.Context(), tt.f, tt.by...)
				if err != nil {
					t.Fatal(err)
				}
				fromInput := sumBy(normalizedAll(rs), tt.f, tt.by)
				if d := cmp.Diff(fromInput, got); d != "" {
					t.Errorf("Query against the records written (-want +got):\n%s", d)
				}
				fromRows := sumBy(readAll(t, db, tt.f), Filter{}, tt.by)
				if d := cmp.Diff(fromRows, got); d != "" {
					t.Errorf("Query against the ledger's rows (-want +got):\n%s", d)
				}
			})
		}
	})
}

// sumBy is the test's own Query: group in Go, order as SQL does (byte
// order of the group values, which the C collation of the test clusters
// shares).
func sumBy(rs []Record, f Filter, by []Dimension) []Row {
	index := map[Group]int{}
	out := []Row{}
	if len(by) == 0 { // one row of totals, even of nothing
		index[Group{}] = 0
		out = append(out, Row{})
	}
	for i := range rs {
		r := &rs[i]
		if !f.Match(r) {
			continue
		}
		var g Group
		for _, d := range by {
			if k := d.TagKey(); k != "" {
				g.Tag = r.Tags[k]
				continue
			}
			*g.field(d) = map[Dimension]string{
				ByTenant: r.Tenant, ByApp: r.App, ByModel: r.Model(), ByProvider: r.Provider, ByKey: r.KeyName, ByRoute: r.Route,
				BySession: r.SessionID,
			}[d]
		}
		k, ok := index[g]
		if !ok {
			k = len(out)
			index[g] = k
			out = append(out, Row{Group: g})
		}
		out[k].Add(r)
	}
	key := func(r Row) string {
		var parts []string
		for _, d := range by {
			parts = append(parts, *r.field(d))
		}
		return strings.Join(parts, "\x00")
	}
	slices.SortFunc(out, func(a, b Row) int { return strings.Compare(key(a), key(b)) })
	return out
}

func TestQueryRejectsBadDimensions(t *testing.T) {
	db := mustOpen(t, engines[0].fresh(t))
	tests := []struct {
		name    string
		by      []Dimension
		wantErr string
	}{
		{"unknown", []Dimension{"tenant; DROP TABLE usage_records"}, "unknown dimension"},
		{"twice", []Dimension{ByTenant, ByTenant}, "given twice"},
		{"two tags", []Dimension{ByTag("team"), ByTag("feature")}, "one tag dimension"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := db.Query(t.Context(), Filter{}, tt.by...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRecordsFilters(t *testing.T) {
	rs := genRecords(200, 4)
	forEachEngine(t, func(t *testing.T, _ engine, cfg Config) {
		db := mustOpen(t, cfg)
		if _, err := db.Insert(t.Context(), rs); err != nil {
			t.Fatal(err)
		}
		for _, f := range []Filter{{}, {Tenant: "acme", App: "batch"}, {From: rs[50].Time, To: rs[150].Time, Model: "claude-sonnet"},
			{Tags: map[string]string{"team": "search"}, Session: "session-2"}} {
			var want []Record
			for _, r := range normalizedAll(rs) {
				if f.Match(&r) {
					want = append(want, r)
				}
			}
			if d := cmp.Diff(want, readAll(t, db, f)); d != "" {
				t.Errorf("Records(%+v) (-want +got):\n%s", f, d)
			}
		}
	})
}
