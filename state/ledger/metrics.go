package ledger

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Drop reasons, the values of the reason label of
// switchyard_ledger_dropped_records_total.
const (
	// DropBufferFull: the queue held WriterOptions.Capacity records.
	DropBufferFull = "buffer_full"
	// DropRefused: the database refused the record itself.
	DropRefused = "refused"
	// DropInvalid: the record had no request ID to make it idempotent.
	DropInvalid = "invalid"
	// DropClosed: the record came after Close, or Close ran out of time
	// before it could be written.
	DropClosed = "closed"
)

// Metrics counts what a Writer does. It is a prometheus.Collector; register
// it once and hand it to the writer through WriterOptions. Labels are
// bounded: a drop reason or an error kind, never a tenant or a key.
type Metrics struct {
	written    prometheus.Counter
	duplicates prometheus.Counter
	batches    prometheus.Counter
	errors     *prometheus.CounterVec
	buffered   prometheus.Gauge
	dropped    *prometheus.CounterVec
	flush      prometheus.Histogram
}

// NewMetrics makes the collectors named switchyard_ledger_*, registered on reg
// (nil: registered nowhere, for tests that read them directly).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		written: f.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_ledger_records_written_total",
			Help: "Records written to the ledger database.",
		}),
		duplicates: f.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_ledger_duplicate_records_total",
			Help: "Records skipped because their request ID was already in the ledger (a retried batch).",
		}),
		batches: f.NewCounter(prometheus.CounterOpts{
			Name: "switchyard_ledger_batches_total",
			Help: "Batches committed to the ledger database, one transaction each.",
		}),
		errors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_ledger_write_errors_total",
			Help: "Failed batch writes, by kind: unavailable (kept and retried) or refused (the bad records are dropped).",
		}, []string{"kind"}),
		buffered: f.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_ledger_buffered_records",
			Help: "Records waiting in memory to be written.",
		}),
		dropped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_ledger_dropped_records_total",
			Help: "Records that will never be written, by reason (buffer_full, refused, invalid, closed).",
		}, []string{"reason"}),
		flush: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchyard_ledger_flush_duration_seconds",
			Help:    "Time to write one batch, failed attempts included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8), // 1ms to 16s
		}),
	}
	for _, kind := range []string{"unavailable", "refused"} {
		m.errors.WithLabelValues(kind)
	}
	for _, reason := range []string{DropBufferFull, DropRefused, DropInvalid, DropClosed} {
		m.dropped.WithLabelValues(reason)
	}
	return m
}

// The helpers below accept a nil receiver so that a writer without metrics
// needs no checks.

func (m *Metrics) batch(sent, inserted int, took time.Duration) {
	if m != nil {
		m.batches.Inc()
		m.written.Add(float64(inserted))
		m.duplicates.Add(float64(sent - inserted))
		m.flush.Observe(took.Seconds())
	}
}

func (m *Metrics) failed(kind string, took time.Duration) {
	if m != nil {
		m.errors.WithLabelValues(kind).Inc()
		m.flush.Observe(took.Seconds())
	}
}

func (m *Metrics) drop(reason string, n int) {
	if m != nil && n > 0 {
		m.dropped.WithLabelValues(reason).Add(float64(n))
	}
}

func (m *Metrics) depth(n int) {
	if m != nil {
		m.buffered.Set(float64(n))
	}
}
