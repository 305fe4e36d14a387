package ledger

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestRatingsAndQuality: ratings join their requests; a second rating of
// a request replaces the first; the judge's verdicts are counted apart
// from the apps' ratings; auto requests' cost is summed against the
// strongest model's, per route, tenant and model.
func TestRatingsAndQuality(t *testing.T) {
	forEachEngine(t, func(t *testing.T, _ engine, cfg Config) {
		db := mustOpen(t, cfg)
		recs := []Record{
			{RequestID: "a1", Time: t0, Tenant: "acme", Route: "chat", ServedModel: "mini", CostMicros: 100, StrongCostMicros: 1500},
			{RequestID: "a2", Time: t0, Tenant: "acme", Route: "chat", ServedModel: "mini", CostMicros: 200, StrongCostMicros: 2500},
			{RequestID: "a3", Time: t0, Tenant: "acme", Route: "chat", ServedModel: "big", CostMicros: 3000, StrongCostMicros: 3000},
			{RequestID: "n1", Time: t0, Tenant: "acme", Route: "chat", ServedModel: "mini", CostMicros: 50},
			{RequestID: "g1", Time: t0, Tenant: "globex", Route: "chat", ServedModel: "mini", CostMicros: 10, StrongCostMicros: 90},
		}
		if _, err := db.Insert(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
		for _, r := range []Rating{
			{RequestID: "a1", Score: 1, Time: t0},
			{RequestID: "a2", Score: 0.5, Time: t0},
			{RequestID: "n1", Score: 0, Time: t0},
			{RequestID: "a1", Score: 0.25, Time: t0, Judged: true}, // the judge's, beside the app's
			{RequestID: "a2", Score: 0.5, Time: t0, Judged: true},
		} {
			if err := db.Rate(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
		// A request counts once: a second rating changes nothing.
		for _, again := range []Rating{{RequestID: "a1", Score: 0, Time: t0.Add(1)}, {RequestID: "a2", Score: 1, Time: t0.Add(1), Judged: true}} {
			if err := db.Rate(t.Context(), again); !errors.Is(err, ErrAlreadyRated) {
				t.Errorf("Rate(%+v) again: %v, want ErrAlreadyRated", again, err)
			}
		}
		for _, bad := range []Rating{{RequestID: "", Score: 1}, {RequestID: "a1", Score: 1.5}, {RequestID: "a1", Score: math.NaN()}} {
			if err := db.Rate(t.Context(), bad); err == nil {
				t.Errorf("Rate(%+v) accepted", bad)
			}
		}
		got, err := db.Quality(t.Context(), Filter{Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		want := []Quality{
			{Route: "chat", Tenant: "acme", Model: "big", Requests: 1, Auto: 1, AutoCostMicros: 3000, StrongCostMicros: 3000},
			{Route: "chat", Tenant: "acme", Model: "mini", Requests: 3, Auto: 2, AutoCostMicros: 300, StrongCostMicros: 4000, Ratings: 3, MeanScore: 0.5, Judged: 2, MeanJudged: 0.375},
		}
		if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
			t.Errorf("acme's quality (-want +got):\n%s", d)
		}
		if saved := got[1].SavedMicros(); saved != 3700 {
			t.Errorf("saved on mini: %d, want 3700", saved)
		}
		one, err := db.Quality(t.Context(), Filter{RequestID: "g1"})
		if err != nil || len(one) != 1 || one[0].Tenant != "globex" {
			t.Errorf("one request: %+v, %v", one, err)
		}
	})
}
