package extprocapp

import (
	"context"
	"log/slog"
	"time"

	"github.com/switchyard/switchyard/state/store"
)

// spoolLimit bounds the budget commits kept in memory (and on disk) while
// the store is unreachable: at a few hundred bytes each, tens of megabytes
// at most.
const spoolLimit = 100_000

// runQuota starts what keeps budgets exact across replicas and outages
// until ctx ends: a sweep that gives back the reservations of replicas that
// crashed, and the spooler that writes the commits kept during a store
// outage once the store is back. The quota filter commits through the
// spooler it returns.
func runQuota(ctx context.Context, st store.Store, m *store.Metrics, d disk, log *slog.Logger) *store.Spooler {
	spool := store.NewSpooler(st, spoolLimit, m)
	if d.spool != nil {
		spool = store.NewDiskSpooler(st, spoolLimit, m, d.spool, d.left, log)
	}
	go func() {
		spool.Run(ctx, time.Second)
		// One last try on the way out, so a brief outage before shutdown
		// loses nothing.
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := spool.Replay(flush); err != nil || spool.Len() > 0 {
			log.Error("budget commits kept during a store outage were not written", slog.Int("commits", spool.Len()))
		}
	}()
	go sweep(ctx, st, 5*time.Second, log)
	return spool
}

// sweep expires due reservations every so often. Reserve and Budget expire
// lazily too; the sweep gives a crashed replica's holds back sooner.
func sweep(ctx context.Context, st store.Budgets, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := st.Sweep(ctx); err != nil && ctx.Err() == nil {
			log.Debug("sweeping budget reservations failed", slog.String("error", err.Error()))
		} else if n > 0 {
			log.Info("expired budget reservations given back", slog.Int("reservations", n))
		}
	}
}
