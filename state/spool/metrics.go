package spool

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics counts what spools do, labelled by the spool's name (ledger,
// budget): a bounded label. A nil *Metrics counts nothing.
type Metrics struct {
	appends   *prometheus.CounterVec
	replays   *prometheus.CounterVec
	overflows *prometheus.CounterVec
	torns     *prometheus.CounterVec
	errors    *prometheus.CounterVec
	bytes     *prometheus.GaugeVec
}

// NewMetrics makes the collectors named switchyard_spool_*, registered on
// reg (nil: registered nowhere).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		appends: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_spool_appended_total",
			Help: "Records written to a spool on disk.",
		}, []string{"spool"}),
		replays: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_spool_replayed_total",
			Help: "Records a previous process left unacknowledged, found at start and handed back for delivery.",
		}, []string{"spool"}),
		overflows: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_spool_overflow_total",
			Help: "Records not written because the spool was at its bound: kept in memory only, lost if the process dies before delivering them.",
		}, []string{"spool"}),
		torns: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_spool_torn_total",
			Help: "Segments found at start ending in a torn or corrupt record, cut off there.",
		}, []string{"spool"}),
		errors: f.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_spool_errors_total",
			Help: "Writes or fsyncs of a spool that failed (a record not written is kept in memory only).",
		}, []string{"spool"}),
		bytes: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_spool_bytes",
			Help: "Size of a spool's files on disk.",
		}, []string{"spool"}),
	}
}

func (m *Metrics) appended(name string) {
	m.count(func() *prometheus.CounterVec { return m.appends }, name, 1)
}
func (m *Metrics) replayed(name string, n int) {
	m.count(func() *prometheus.CounterVec { return m.replays }, name, n)
}
func (m *Metrics) overflow(name string) {
	m.count(func() *prometheus.CounterVec { return m.overflows }, name, 1)
}
func (m *Metrics) torn(name string) {
	m.count(func() *prometheus.CounterVec { return m.torns }, name, 1)
}
func (m *Metrics) failed(name string) {
	m.count(func() *prometheus.CounterVec { return m.errors }, name, 1)
}

// count adds n to the counter vec returns, unless m is nil.
func (m *Metrics) count(vec func() *prometheus.CounterVec, name string, n int) {
	if m != nil && n > 0 {
		vec().WithLabelValues(name).Add(float64(n))
	}
}

func (m *Metrics) size(name string, n int64) {
	if m != nil {
		m.bytes.WithLabelValues(name).Set(float64(n))
	}
}
