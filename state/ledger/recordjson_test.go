package ledger

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRecordJSON: the hand-written encoding is encoding/json's, read back
// as JSON, for records with every field set, with none, and with the
// strings JSON must escape; and json.Unmarshal reads the record back.
func TestRecordJSON(t *testing.T) {
	full := genRecords(1, 41)[0]
	full.Tags = map[string]string{"team": "a", "cost-center": "b\"\\", "é": "\u2028<&>"}
	full.FallbackReasons = []string{"p/m: 500", "q/n: no response"}
	full.Time = time.Date(2026, 12, 5, 17, 0, 1, 123456789, time.FixedZone("x", 3600))
	full.RoutingScore = 0.125
	full.Stream, full.CacheHit, full.UsageEstimated = true, true, true
	weird := full
	weird.RequestID = "a\x00b\x1f\n\t\r\"\\/ é 😀"
	weird.Tenant = "bad \xff\xfe utf8 \xe2\x82"
	weird.RoutingScore = 1e21
	weird.Latency = -time.Second
	for name, r := range map[string]Record{"full": full, "zero": {}, "escapes": weird, "empty slices": {FallbackReasons: []string{}, Tags: map[string]string{}}} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			got := r.appendJSON(nil)
			if !json.Valid(got) {
				t.Fatalf("not JSON: %s", got)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("encoding (-encoding/json +appendJSON):\n%s", d)
			}
			var back, wantBack Record
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal(want, &wantBack)
			if d := cmp.Diff(wantBack, back); d != "" {
				t.Errorf("read back (-from encoding/json +from appendJSON):\n%s", d)
			}
		})
	}
}

// TestRecordJSONScoreNotANumber: a score encoding/json refuses is written
// 0, so the record still spools.
func TestRecordJSONScoreNotANumber(t *testing.T) {
	for _, score := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		r := Record{RequestID: "r", RoutingScore: score}
		var back Record
		if err := json.Unmarshal(r.appendJSON(nil), &back); err != nil || back.RoutingScore != 0 || back.RequestID != "r" {
			t.Errorf("score %v read back as %v (%v)", score, back.RoutingScore, err)
		}
	}
}

// FuzzRecordJSON: any strings encode to JSON that reads back as the
// record encoding/json would have written.
func FuzzRecordJSON(f *testing.F) {
	f.Add("id", "tenant", "k", "v", 0.5)
	f.Add("\xff", "\u2028", "\x00", "\"", 1e300)
	f.Fuzz(func(t *testing.T, id, tenant, k, v string, score float64) {
		r := Record{RequestID: id, Tenant: tenant, Tags: map[string]string{k: v}, FallbackReasons: []string{v}, RoutingScore: score}
		want, err := json.Marshal(r)
		if err != nil {
			return // encoding/json refuses a score that is not a number
		}
		var back, wantBack Record
		if err := json.Unmarshal(r.appendJSON(nil), &back); err != nil {
			t.Fatalf("%q: %v", r.appendJSON(nil), err)
		}
		_ = json.Unmarshal(want, &wantBack)
		if d := cmp.Diff(wantBack, back); d != "" {
			t.Errorf("read back (-from encoding/json +from appendJSON):\n%s", d)
		}
	})
}
