package store

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics counts what the store does out of sight: outages, expired
// reservations and spooled commits. Make it once per process and hand it
// to the stores and the Spooler through Options. Labels are bounded: an operation name or a drop reason, never a tenant or a key.
type Metrics struct {
	unavailable *prometheus.CounterVec
	expired     prometheus.Counter
	spooled     prometheus.Counter
	replayed    prometheus.Counter
	dropped     *prometheus.CounterVec
	spoolDepth  prometheus.Gauge
}

// NewMetrics makes the collectors named switchyard_store_*, registered on reg
// (nil: registered nowhere, for tests that read them directly).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		unavailable: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_store_unavailable_total",
			Help: "Store calls that failed because the backend could not be reached, by operation.",
		}, []string{"op"}),
		expired: f.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_store_reservations_expired_total",
			Help: "Budget reservations that reached their TTL and were returned to the pool.",
		}),
		spooled: f.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_store_spooled_commits_total",
			Help: "Commits kept in memory because the store was unavailable.",
		}),
		replayed: f.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_store_replayed_commits_total",
			Help: "Spooled commits written once the store came back.",
		}),
		dropped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_store_dropped_commits_total",
			Help: "Commits that could not be kept or written, by reason (spool_full, unknown_reservation, rejected).",
		}, []string{"reason"}),
		spoolDepth: f.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_store_spool_depth",
			Help: "Commits waiting in the spool.",
		}),
	}
}

// The helpers below accept a nil receiver so that stores without metrics need
// no checks.

func (m *Metrics) outage(op string) {
	if m != nil {
		m.unavailable.WithLabelValues(op).Inc()
	}
}

func (m *Metrics) expiredN(n int) {
	if m != nil && n > 0 {
		m.expired.Add(float64(n))
	}
}

func (m *Metrics) spool(depth int) {
	if m != nil {
		m.spooled.Inc()
		m.spoolDepth.Set(float64(depth))
	}
}

func (m *Metrics) replay(depth int) {
	if m != nil {
		m.replayed.Inc()
		m.spoolDepth.Set(float64(depth))
	}
}

func (m *Metrics) drop(reason string, depth int) {
	if m != nil {
		m.dropped.WithLabelValues(reason).Inc()
		m.spoolDepth.Set(float64(depth))
	}
}
