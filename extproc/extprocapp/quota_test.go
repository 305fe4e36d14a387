package extprocapp

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/state/store"
)

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

// TestSweep: the background sweep gives a crashed replica's reservation
// back without anyone touching the tenant's budget.
func TestSweep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &clock{t: time.Date(2026, 3, 15, 13, 0, 0, 0, time.UTC)}
	reg := prometheus.NewRegistry()
	m := store.NewMetrics(reg)
	st := store.NewMemory(store.Options{Clock: c, Metrics: m})
	line := store.BudgetLine{Scope: store.Scope{Tenant: "acme"}, Period: store.Daily, Limit: 1_000}
	if err := st.Reserve(ctx, store.ReservationID{Tenant: "acme", Request: "crashed"}, []store.BudgetLine{line}, 400, time.Minute); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(2 * time.Minute)
	done := make(chan struct{})
	go func() { sweep(ctx, st, time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil))); close(done) }()
	for deadline := time.Now().Add(10 * time.Second); expired(t, reg) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sweep never expired the reservation")
		}
	}
	cancel()
	<-done
	st2, err := st.Budget(context.Background(), line)
	if err != nil {
		t.Fatal(err)
	}
	if st2.Reserved != 0 || expired(t, reg) != 1 {
		t.Errorf("reserved %d, expired %v; want 0, 1", st2.Reserved, expired(t, reg))
	}
}

func expired(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "switchyard_store_reservations_expired_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
