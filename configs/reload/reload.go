// Package reload reports each policy load of a process that watches
// configs/: xds and extproc count, log and audit a load the same way, so an
// operator reads one story whichever process refused an edit.
package reload

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/audit"
)

// Reporter reports the loads of one process's policy directory.
type Reporter struct {
	dir              string
	log              *slog.Logger
	trail            *audit.Logger
	applied, refused prometheus.Counter
}

// New registers switchyard_config_reloads_total for process on reg. Both
// series exist from the start, so a dashboard shows 0, not nothing.
func New(reg prometheus.Registerer, process, dir string, log *slog.Logger, trail *audit.Logger) *Reporter {
	loads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_config_reloads_total",
		Help: "Policy loads by process and result (applied, refused), the first load at start included.",
	}, []string{"process", "result"})
	reg.MustRegister(loads)
	return &Reporter{
		dir: dir, log: log, trail: trail,
		applied: loads.WithLabelValues(process, "applied"),
		refused: loads.WithLabelValues(process, "refused"),
	}
}

// Applied reports that the policy of version now serves.
func (r *Reporter) Applied(ctx context.Context, version string) {
	r.applied.Inc()
	r.log.Info("policy applied", slog.String("version", version), slog.String("dir", r.dir))
	r.trail.Config(ctx, r.dir, version, nil)
}

// Refused reports a policy that was not applied, and why; whatever served
// before keeps serving.
func (r *Reporter) Refused(ctx context.Context, err error) {
	r.refused.Inc()
	r.log.Error("policy refused", slog.String("dir", r.dir), slog.String("error", err.Error()))
	r.trail.Config(ctx, r.dir, "", err)
}
