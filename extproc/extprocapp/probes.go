package extprocapp

import (
	"context"
	"io"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchyard/switchyard/state/health"
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
// (every check passes, else 503 naming the failing one), which also lists
// the providers the gateway cannot reach (unreachable); and the Go
// profiles only when asked for, since a profile shows request data.
//
// A provider out of reach leaves the replica ready: every replica shares
// its network, and taking them all out of service would turn a provider's
// outage into the gateway's, with no 503 left to say why.
func opsMux(reg prometheus.Gatherer, version func() string, checks []check, unreachable func() []string, profiles bool) *http.ServeMux {
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
		for _, line := range unreachable() {
			_, _ = io.WriteString(w, line+"\n")
		}
	})
	if profiles {
		// What stalls a request (a lock, a channel, the scheduler) shows
		// in the mutex and block profiles and the execution trace, not in
		// the CPU profile.
		runtime.SetMutexProfileFraction(10)
		runtime.SetBlockProfileRate(int(100 * time.Microsecond))
		// Fine enough to tell what each open stream keeps.
		runtime.MemProfileRate = 4 << 10
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// unreachableLines are the readiness probe's lines for the providers the
// gateway cannot reach.
func unreachableLines(mon *health.Monitor) []string {
	var out []string
	for _, u := range mon.Unreachable() {
		out = append(out, "provider "+u.Provider+" unreachable since "+u.Since.UTC().Format(time.RFC3339)+": "+u.Reason)
	}
	return out
}
