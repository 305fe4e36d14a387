// Package reload reports each policy load of a process that watches
// configs/: xds and extproc count, log and audit a load the same way, so an
// operator reads one story whichever process refused an edit.
package reload

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/audit"
)

// Reporter reports the loads of one process's policy directory.
type Reporter struct {
	dir              string
	log              *slog.Logger
	trail            *audit.Logger
	applied, refused prometheus.Counter
	now              func() time.Time

	mu     sync.Mutex
	status Status
}

// Status is what a process knows of its policy loads, for the console.
type Status struct {
	// Version is the policy serving and Applied when it took effect;
	// both are zero before the first load.
	Version string
	Applied time.Time
	// Refused is the last policy refused, nil while none was. A refusal
	// older than Applied was followed by an edit that took effect.
	Refused *Refusal
}

// Refusal is a policy that was not applied: when, and its errors, one
// per line as the loader wrote them (file:line: field: reason).
type Refusal struct {
	At     time.Time
	Errors []string
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
		now:     time.Now,
	}
}

// Applied reports that the policy of version now serves.
func (r *Reporter) Applied(ctx context.Context, version string) {
	r.applied.Inc()
	r.mu.Lock()
	r.status.Version, r.status.Applied = version, r.now()
	r.mu.Unlock()
	r.log.Info("policy applied", slog.String("version", version), slog.String("dir", r.dir))
	r.trail.Config(ctx, r.dir, version, nil)
}

// Refused reports a policy that was not applied, and why; whatever served
// before keeps serving.
func (r *Reporter) Refused(ctx context.Context, err error) {
	r.refused.Inc()
	r.mu.Lock()
	r.status.Refused = &Refusal{At: r.now(), Errors: strings.Split(err.Error(), "\n")}
	r.mu.Unlock()
	r.log.Error("policy refused", slog.String("dir", r.dir), slog.String("error", err.Error()))
	r.trail.Config(ctx, r.dir, "", err)
}

// Status returns what the reporter has seen so far.
func (r *Reporter) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}
