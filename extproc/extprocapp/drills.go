package extprocapp

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/store"
)

// syncDrills applies the fault drills kept in the shared store to this
// replica's health monitor, so a drill started through any replica's
// admin API holds on all of them within a second.
func syncDrills(ctx context.Context, st store.HealthBoard, mon *health.Monitor, every time.Duration, log *slog.Logger) {
	var applied []string
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		drills, err := st.Drills(ctx)
		if err == nil {
			for _, p := range drills {
				if !slices.Contains(applied, p) {
					mon.SetDrill(p, true)
				}
			}
			for _, p := range applied {
				if !slices.Contains(drills, p) {
					mon.SetDrill(p, false)
				}
			}
			applied = drills
		} else if ctx.Err() == nil {
			log.Warn("reading fault drills from the store failed; keeping the last known ones", slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
