package app

import (
	"context"
	"io"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// check is one dependency readiness waits for.
type check struct {
	name string
	ping func(ctx context.Context) error
}

// probeTimeout bounds each readiness check: a probe that hangs would hold
// the orchestrator's own timeout instead of saying no.
const probeTimeout = 2 * time.Second

// opsMux serves the operators' address: /metrics; /healthz, liveness (the
// process serves; it answers the policy version); /readyz, readiness
// (every check passes, else 503 naming the failing one); and the Go
// profiles only when asked for, since a profile shows request data.
func opsMux(reg prometheus.Gatherer, version func() string, checks []check, profiles bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, version())
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		for _, c := range checks {
			ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
			err := c.ping(ctx)
			cancel()
			if err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, c.name+" not ready\n")
				return
			}
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	if profiles {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	return mux
}
