package lease

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics counts where admissions were answered and the store calls the
// lease layer made, on the request path and in the background. Labels are
// bounded: never a tenant or a key.
type Metrics struct {
	admissions *prometheus.CounterVec
	calls      *prometheus.CounterVec
	commits    *prometheus.CounterVec
	// The per-request series, looked up once.
	fromLease, fromStore, onPath prometheus.Counter
}

// NewMetrics makes the switchyard_lease_* collectors, registered on reg
// (nil: registered nowhere).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		admissions: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_lease_admissions_total",
			Help: "Admissions by where they were answered: lease (from leases held by this replica, no store call) or store (one store round trip on the request path).",
		}, []string{"path"}),
		calls: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_lease_store_calls_total",
			Help: "Calls to the shared store made by the lease layer, by path: request (a request waits for it) or background (lease takes, commits and batched corrections).",
		}, []string{"path"}),
		commits: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_lease_budget_leases_total",
			Help: "Budget leases by how they ended: taken, committed, released, spooled (kept for replay during a store outage) or failed.",
		}, []string{"outcome"}),
	}
	m.fromLease, m.fromStore = m.admissions.WithLabelValues("lease"), m.admissions.WithLabelValues("store")
	m.onPath = m.calls.WithLabelValues("request")
	return m
}

// The helpers accept a nil receiver.

func (m *Metrics) admitted(leased bool) {
	switch {
	case m == nil:
	case leased:
		m.fromLease.Inc()
	default:
		m.fromStore.Inc()
	}
}

func (m *Metrics) call(path string) {
	switch {
	case m == nil:
	case path == "request":
		m.onPath.Inc()
	default:
		m.calls.WithLabelValues(path).Inc()
	}
}

func (m *Metrics) lease(outcome string) {
	if m != nil {
		m.commits.WithLabelValues(outcome).Inc()
	}
}
