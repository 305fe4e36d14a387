package store

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestScriptsRefuseNonIntegerAmounts: a settle whose amount Redis would
// refuse must change nothing. Redis does not roll a script back, so a
// HINCRBY refused halfway through would leave the reservation's amount
// released but the reservation still live, to be released again when it
// expires.
func TestScriptsRefuseNonIntegerAmounts(t *testing.T) {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: sharedRedis.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	r := NewRedis(client, Options{Clock: newFakeClock(t0), Prefix: isolated("lua-int")})
	line := BudgetLine{Scope: acme, Period: Daily, Limit: 5_000_000}
	if err := r.Reserve(ctx, rid("n1"), []BudgetLine{line}, 1_000, budgetTTL); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"1.5", "1e3", "12abc", ""} {
		err := settleScript.Run(ctx, client, []string{r.expiryKey(acme.Tenant), r.resKey(rid("n1"))}, "n1", bad, 60_000).Err()
		if err == nil {
			t.Errorf("settle with actual %q: no error", bad)
		}
	}
	wantView(t, r, line, budgetView{0, 1_000, 4_999_000})
	settle(t, r, true, "n1", 700, OutcomeCommitted, nil)
	wantView(t, r, line, budgetView{700, 0, 4_999_300})
}
