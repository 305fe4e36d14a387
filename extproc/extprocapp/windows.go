package extprocapp

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/store"
)

// healthSeries is the store's series of each replica's health window
// counts.
const healthSeries = "health_windows"

// windowShare shares the attempts in this replica's health windows with
// the other replicas, off the request path: every tick it writes its own
// counts to the store and reads the others', which the monitor judges
// each model's error rate on beside its own. Every replica so sees the
// same degraded or removed model a tick and a read after the errors. A
// replica that stops writing drops out after windowTTL.
type windowShare struct {
	board   store.SketchBoard
	mon     *health.Monitor
	replica string
	log     *slog.Logger
	failing bool // the last exchange with the store failed, logged once
}

// windowTTL is how long a replica's counts count after its last write.
const windowTTL = 3 * time.Second

func newWindowShare(board store.SketchBoard, mon *health.Monitor, replica string, log *slog.Logger) *windowShare {
	return &windowShare{board: board, mon: mon, replica: replica, log: log}
}

func (w *windowShare) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.tick(ctx)
		}
	}
}

// tick writes this replica's counts and applies the others'. While the
// store is unreachable the last counts applied stand until they are
// replaced, and only this replica's own attempts move its verdicts.
func (w *windowShare) tick(ctx context.Context) {
	own, err := json.Marshal(w.mon.LocalCounts())
	if err == nil {
		err = w.board.PutSketch(ctx, healthSeries, w.replica, own, windowTTL)
	}
	var all map[string][]byte
	if err == nil {
		all, err = w.board.Sketches(ctx, healthSeries)
	}
	if err != nil {
		if !w.failing && ctx.Err() == nil {
			w.log.Warn("sharing health windows failed", slog.String("error", err.Error()))
		}
		w.failing = true
		return
	}
	w.failing = false
	var others []health.ModelCounts
	for replica, data := range all {
		if replica == w.replica {
			continue
		}
		var counts []health.ModelCounts
		if json.Unmarshal(data, &counts) == nil {
			others = append(others, counts...)
		}
	}
	w.mon.SetShared(others)
}
