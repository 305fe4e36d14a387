package server

import (
	"sync"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// phaseMetrics times each ext_proc message, from its arrival to the answer
// being handed to gRPC: the latency ext_proc adds to a request, per phase.
type phaseMetrics struct {
	duration *prometheus.HistogramVec
	// panics counts the panics recovered, by stream kind.
	panics *prometheus.CounterVec
	// shed counts the requests refused at capacity, by bound.
	shed *prometheus.CounterVec
	// bound holds duration's series of each stream's phases.
	bound [numPhases][2]boundPhase
}

func newPhaseMetrics() *phaseMetrics {
	return &phaseMetrics{shed: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_extproc_shed_total",
		Help: "Requests refused with 503 because ext_proc was at capacity, by bound (requests, bytes in flight).",
	}, []string{"bound"}), panics: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchyard_extproc_panics_total",
		Help: "Panics recovered while processing a request, by stream (request, attempt); each cost one request a 500.",
	}, []string{"stream"}), duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "switchyard_extproc_message_duration_seconds",
		Help: "Time ext_proc spent on one message, by phase (request_headers, request_body, response_headers, response_body, trailers; attempt_* on the per-attempt stream; attempt_log for a batch of Envoy's attempt log and cut_log of its cut log, which block no request).",
		// 25µs to ~0.8s: filters take microseconds; the tail is a store
		// call on the request path.
		Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
	}, []string{"phase"})}
}

// Collector returns the server's metrics, to register once.
func (s *Server) Collector() prometheus.Collector { return s.metrics }

// Describe implements [prometheus.Collector].
func (m *phaseMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.duration.Describe(ch)
	m.panics.Describe(ch)
	m.shed.Describe(ch)
}

// Collect implements [prometheus.Collector].
func (m *phaseMetrics) Collect(ch chan<- prometheus.Metric) {
	m.duration.Collect(ch)
	m.panics.Collect(ch)
	m.shed.Collect(ch)
}

// observe records the time spent on one message of the request stream, or
// of an attempt's stream.
func (m *phaseMetrics) observe(req *extprocv3.ProcessingRequest, attempt bool, took time.Duration) {
	stream := 0
	if attempt {
		stream = 1
	}
	phase := phaseOf(req)
	b := &m.bound[phase][stream]
	// Bound on first use, so a phase no request has is no series: the
	// label lookup (validated, hashed) is not paid on every message.
	b.once.Do(func() { b.obs = m.duration.WithLabelValues(phaseNames[stream][phase]) })
	b.obs.Observe(took.Seconds())
}

// observePhase records a phase outside the two streams' messages.
func (m *phaseMetrics) observePhase(phase string, took time.Duration) {
	m.duration.WithLabelValues(phase).Observe(took.Seconds())
}

// The phases of a message, as phaseOf numbers them.
const (
	phaseRequestHeaders = iota
	phaseRequestBody
	phaseResponseHeaders
	phaseResponseBody
	phaseRequestTrailers
	phaseResponseTrailers
	phaseOther
	numPhases
)

// phaseNames are the phase labels of the request stream's messages [0]
// and of an attempt's [1].
var phaseNames = func() (n [2][numPhases]string) {
	n[0] = [numPhases]string{"request_headers", "request_body", "response_headers", "response_body", "request_trailers", "response_trailers", "other"}
	for i, name := range n[0] {
		n[1][i] = "attempt_" + name
	}
	return n
}()

// boundPhase is one phase's histogram, bound once.
type boundPhase struct {
	once sync.Once
	obs  prometheus.Observer
}

func phaseOf(req *extprocv3.ProcessingRequest) int {
	switch req.Request.(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return phaseRequestHeaders
	case *extprocv3.ProcessingRequest_RequestBody:
		return phaseRequestBody
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return phaseResponseHeaders
	case *extprocv3.ProcessingRequest_ResponseBody:
		return phaseResponseBody
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return phaseRequestTrailers
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return phaseResponseTrailers
	}
	return phaseOther
}
