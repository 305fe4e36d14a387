package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/store"
)

// alertLog is an events target that keeps the budget alerts it is sent.
type alertLog struct {
	mu   sync.Mutex
	msgs []events.Budget
}

func (l *alertLog) Publish(_ context.Context, msgs []events.Message) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		var b events.Budget
		if err := json.Unmarshal(m.JSON, &b); err != nil {
			return 0, err
		}
		l.msgs = append(l.msgs, b)
	}
	return len(msgs), nil
}

// TestBudgetAlertsOfEveryLine: the quota filter hands the alerter every
// budget line an admission checks, so an app's and a key's budgets alert
// as a tenant's do, each named by its scope and at its own limit.
func TestBudgetAlertsOfEveryLine(t *testing.T) {
	hook := &alertLog{}
	alerts := events.NewAlerter(nil, hook, slog.Default())
	cfg := DefaultConfig()
	cfg.BudgetRefresh = 0
	r := newRigAlerting(t, testPolicy, t0, cfg, alerts)
	// Spent earlier: 52% of app web's daily 0.005 USD, 82.5% of
	// small-key's monthly 0.004 USD; the tenant's own budgets are far.
	commit := func(l store.BudgetLine, micros int64) {
		id := store.ReservationID{Tenant: l.Scope.Tenant, Request: fmt.Sprintf("earlier-%s", l.Scope)}
		if err := r.mem.Reserve(context.Background(), id, []store.BudgetLine{l}, micros, time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := r.mem.Commit(context.Background(), id, micros); err != nil {
			t.Fatal(err)
		}
	}
	commit(store.BudgetLine{Scope: store.Scope{Tenant: "acme", App: "web"}, Period: store.Daily, Limit: 5_000}, 2_600)
	commit(store.BudgetLine{Scope: store.Scope{Tenant: "acme", Key: "small-key"}, Period: store.Monthly, Limit: 4_000}, 3_300)

	for _, key := range []string{"sk-web", "sk-small"} {
		if _, refusal := r.send(key, chat("small", 10)); refusal != nil {
			t.Fatalf("%s refused: %v", key, refusal)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	alerts.Close(ctx)

	type alert struct {
		app, key, period string
		threshold        int
		limit            int64
	}
	var got []alert
	hook.mu.Lock()
	for _, b := range hook.msgs {
		if b.Tenant != "acme" || b.SpentMicros*100 < int64(b.Threshold)*b.LimitMicros {
			t.Errorf("alert %+v: not acme's, or below its threshold", b)
		}
		got = append(got, alert{b.App, b.KeyName, b.Period, b.Threshold, b.LimitMicros})
	}
	hook.mu.Unlock()
	want := []alert{
		{app: "web", period: "daily", threshold: 50, limit: 5_000},
		{key: "small-key", period: "monthly", threshold: 50, limit: 4_000},
		{key: "small-key", period: "monthly", threshold: 80, limit: 4_000},
	}
	key := func(a alert) string { return fmt.Sprint(a) }
	slices.SortFunc(got, func(a, b alert) int { return strings.Compare(key(a), key(b)) })
	slices.SortFunc(want, func(a, b alert) int { return strings.Compare(key(a), key(b)) })
	if !slices.Equal(got, want) {
		t.Errorf("alerts %+v, want %+v", got, want)
	}
}
