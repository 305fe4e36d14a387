package probe

import "github.com/prometheus/client_golang/prometheus"

// metrics are the prober's counters; each replica counts the probes it
// ran, so Prometheus sums them over replicas. The verdicts are the
// board's (switchyard_probe_failing).
type metrics struct {
	runs *prometheus.CounterVec
	cost *prometheus.CounterVec
}

// newMetrics makes the prober's counters and registers them on reg,
// unless reg is nil.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_probe_runs_total",
			Help: "Capability probes, by provider, capability and outcome: passed, failed, inconclusive or capped (not sent: the daily cap was reached).",
		}, []string{"provider", "capability", "outcome"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_probe_cost_micro_usd_total",
			Help: "What capability probes cost in micro-USD, by provider: the provider's count priced, or the reserved worst case when it gave none.",
		}, []string{"provider"}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.cost)
	}
	return m
}
