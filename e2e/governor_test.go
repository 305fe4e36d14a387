package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/store"
)

// governedTenants are two tenants alike, each with a daily budget of 2.40
// USD (hourly slots of 0.10 USD) and routing all on quality, so that
// "model": "auto" picks the best model, claude-3-5-sonnet, unless the
// cost governor steers.
var governedTenants = `tenants:
  - name: frugal
    budget_usd: {daily: 2.40}
    routing: {strategy: weighted, weights: {quality: 1}}
    keys: [{name: frugal-key, sha256: ` + sha("sk-e2e-frugal") + `}]
  - name: lavish
    budget_usd: {daily: 2.40}
    routing: {strategy: weighted, weights: {quality: 1}}
    keys: [{name: lavish-key, sha256: ` + sha("sk-e2e-lavish") + `}]
`

// TestGovernorSteersAutoToCheapModels: a tenant that has spent 85% of its
// current hour's slot of the daily budget (past the governor's high_at,
// 80%, short of cheap_only_at) has "model": "auto" served by a cheap model,
// the models not marked cheap having lost half their score; its twin with
// nothing spent is served by the best model (issue 16 item 7, through the
// real stack: the spend is another replica's, read from Redis).
func TestGovernorSteersAutoToCheapModels(t *testing.T) {
	s := startStack(t, stack.Options{Overlay: map[string]string{"governed.yaml": governedTenants}})
	rc := redis.NewClient(&redis.Options{Addr: s.RedisAddr})
	defer rc.Close()
	st := store.NewRedis(rc, store.Options{})
	ctx := context.Background()
	const daily, spent = 2_400_000, 85_000 // micro-USD: 85% of the hour's 100,000
	line := store.BudgetLine{Scope: store.Scope{Tenant: "frugal"}, Period: store.Daily, Limit: daily}
	id := store.ReservationID{Tenant: "frugal", Request: "another-replica"}
	if err := st.Reserve(ctx, id, []store.BudgetLine{line}, spent, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(ctx, id, spent); err != nil {
		t.Fatal(err)
	}

	cheap := map[string]bool{"gpt-4o-mini": true, "claude-3-5-haiku": true, "gemini-2.0-flash": true}
	for _, tc := range []struct {
		key       string
		wantCheap bool
	}{{"sk-e2e-lavish", false}, {"sk-e2e-frugal", true}} {
		for range 3 {
			a := chatAs(t, fresh, s, tc.key, "auto", 5)
			model := a.header.Get("x-switchyard-model")
			if a.status != http.StatusOK || cheap[model] != tc.wantCheap || (!tc.wantCheap && model != "claude-3-5-sonnet") {
				t.Errorf("%s: %d served by %q (%s); want a cheap model: %v", tc.key, a.status, model, a.header.Get("x-switchyard-route-reason"), tc.wantCheap)
			}
		}
	}
	// The first level, not the second (cheap models only): 85% is short of
	// cheap_only_at.
	url := s.Replicas[0].ExtProcMetrics + "/metrics"
	if f, l := metricSum(t, url, "switchyard_quota_governor_pressure", `tenant="frugal"`), metricSum(t, url, "switchyard_quota_governor_pressure", `tenant="lavish"`); f != 1 || l != 0 {
		t.Errorf("governor pressure: frugal %v, lavish %v; want 1 and 0", f, l)
	}
}
