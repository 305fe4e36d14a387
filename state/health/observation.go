package health

import "time"

// Outcome says how an attempt ended when no HTTP status tells it.
type Outcome int

const (
	// Responded means a response arrived; Observation.Status judges it.
	Responded Outcome = iota
	// ConnectFailure means the provider could not be reached.
	ConnectFailure
	// Reset means the connection closed before the response headers.
	Reset
	// Timeout means no response (or no first byte) came in time.
	Timeout
	// Canceled means the client went away first. It says nothing about the
	// provider, so the monitor ignores the observation.
	Canceled
	// NoAddress means the provider's name resolved to no address: the
	// provider could not be reached, and Envoy tries no other provider
	// after such an attempt.
	NoAddress
)

// Observation is the outcome of one attempt on one model.
type Observation struct {
	Provider, Model string
	// Status is the HTTP status of the attempt, 0 when no response arrived.
	Status int
	// Failure says why no response arrived; Responded when one did.
	Failure Outcome
	// Latency runs from the attempt's start to its response headers or its
	// failure; 0 when unknown, and then not counted in the latencies.
	Latency time.Duration
	// TTFT is the time to the first streamed token; 0 when unknown or not a
	// stream.
	TTFT time.Duration
	// Quota is the remaining provider quota as a fraction 0..1, or -1 when
	// unknown; see [QuotaFromHeaders].
	Quota float64
	// Key is the key the request was admitted with (see [Monitor.Admit]), so
	// that a probe's result settles its own half-open slot; when no slot has
	// this key, the oldest slot is settled.
	Key uint64
	// Detail says, when no response arrived because the provider could
	// not be reached, what failed ("DNS: api.openai.com resolved to no
	// address", "connect: ...", "TLS: ..."); "" otherwise.
	Detail string
}

// Failed reports whether the attempt counts as an error of the provider:
// no response (connect failure, reset, timeout, or a zero status), a 5xx
// (529 included) or a 429. Other 4xx are the client's doing and count as
// successes.
func (o Observation) Failed() bool {
	switch o.Failure {
	case ConnectFailure, NoAddress, Reset, Timeout:
		return true
	case Canceled:
		return false
	}
	return o.Status == 0 || o.Status == 429 || o.Status >= 500
}
