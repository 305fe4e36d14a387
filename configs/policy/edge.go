package policy

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Edge bounds what one client connection, and one provider cluster, may
// hold in Envoy (gateway.edge). Decode YAML over [DefaultEdge], so keys
// left out keep their defaults. The defaults follow Envoy's edge proxy
// best practices, except the listener's buffer, which must hold a whole
// request body (ext_proc reads it buffered; see Listener in xds/resources).
type Edge struct {
	// HTTP2MaxConcurrentStreams bounds the streams one HTTP/2 client
	// connection may open at once.
	HTTP2MaxConcurrentStreams uint32 `yaml:"http2_max_concurrent_streams"`
	// HTTP2InitialStreamWindow and HTTP2InitialConnectionWindow bound what
	// a client may send before Envoy has read it (per stream, per
	// connection).
	HTTP2InitialStreamWindow     ByteSize `yaml:"http2_initial_stream_window"`
	HTTP2InitialConnectionWindow ByteSize `yaml:"http2_initial_connection_window"`
	// IdleTimeout closes a client connection without streams for this long.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// StreamIdleTimeout ends a request on which nothing moved for this long
	// (a long generation that keeps sending is never cut).
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout"`
	// RequestHeadersTimeout bounds how long a client may take to send its
	// headers (slowloris).
	RequestHeadersTimeout time.Duration `yaml:"request_headers_timeout"`
	// HeadersWithUnderscores is reject (400: a header such as x_user_id
	// could pass for x-user-id behind a proxy that folds them) or drop.
	HeadersWithUnderscores string `yaml:"headers_with_underscores"`
	// UpstreamConnectionBuffer bounds what Envoy reads ahead from one
	// provider connection before the client has taken it.
	UpstreamConnectionBuffer ByteSize `yaml:"upstream_connection_buffer"`
	// Upstream* are each provider cluster's circuit breakers: beyond them
	// Envoy answers 503 at once instead of queuing.
	UpstreamMaxConnections     uint32 `yaml:"upstream_max_connections"`
	UpstreamMaxPendingRequests uint32 `yaml:"upstream_max_pending_requests"`
	UpstreamMaxRequests        uint32 `yaml:"upstream_max_requests"`
	// RetryBudgetPercent bounds a cluster's retries in flight to this share
	// of its requests in flight, but always allows RetryMinConcurrency:
	// failover keeps working for ordinary loads while a retry storm cannot
	// multiply an outage.
	RetryBudgetPercent  float64 `yaml:"retry_budget_percent"`
	RetryMinConcurrency uint32  `yaml:"retry_min_concurrency"`
	// MaxRequestsInFlight bounds the requests one node holds at once, from
	// arrival to the last byte of the answer (the wait on a provider
	// included): past it Envoy refuses at once, 503 with retry-after,
	// before ext_proc does any work for the request. Without a bound, a
	// flood beyond what the node's CPU serves is queued, every request
	// grows late together, and none is served before its client gives up.
	// Size it as the rate a node serves times the time a request stays.
	MaxRequestsInFlight uint32 `yaml:"max_requests_in_flight"`
}

// MaxRequestsInFlightLimit is the static bound of envoy/bootstrap.yaml's
// ext_proc cluster, above which the runtime override would not be a
// bound on anything Envoy would otherwise allow.
const MaxRequestsInFlightLimit = 100_000

// DefaultEdge returns the edge limits a policy gets by default.
func DefaultEdge() Edge {
	return Edge{
		HTTP2MaxConcurrentStreams:    100,
		HTTP2InitialStreamWindow:     64 << 10,
		HTTP2InitialConnectionWindow: 1 << 20,
		IdleTimeout:                  time.Hour,
		StreamIdleTimeout:            5 * time.Minute,
		RequestHeadersTimeout:        10 * time.Second,
		HeadersWithUnderscores:       "reject",
		UpstreamConnectionBuffer:     32 << 10,
		UpstreamMaxConnections:       10_000,
		UpstreamMaxPendingRequests:   1_000,
		UpstreamMaxRequests:          10_000,
		RetryBudgetPercent:           50,
		RetryMinConcurrency:          32,
		// ext_proc's own -max-inflight default: Envoy refuses first, where
		// a refusal costs no ext_proc message.
		MaxRequestsInFlight: 1024,
	}
}

// Validate checks the limits against what Envoy accepts and what keeps
// them limits.
func (e Edge) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s "+format, append([]any{field}, args...)...))
	}
	if e.HTTP2MaxConcurrentStreams < 1 || e.HTTP2MaxConcurrentStreams > math.MaxInt32 {
		bad("http2_max_concurrent_streams", "must be between 1 and %d", math.MaxInt32)
	}
	// HTTP/2's own bounds (RFC 9113, 6.9.2), which Envoy enforces.
	if w := e.HTTP2InitialStreamWindow; w < 65535 || w > math.MaxInt32 {
		bad("http2_initial_stream_window", "must be between 65535 bytes and 2GiB")
	}
	if w := e.HTTP2InitialConnectionWindow; w < 65535 || w > math.MaxInt32 {
		bad("http2_initial_connection_window", "must be between 65535 bytes and 2GiB")
	}
	if e.HTTP2InitialConnectionWindow < e.HTTP2InitialStreamWindow {
		bad("http2_initial_connection_window", "must be at least http2_initial_stream_window")
	}
	for _, t := range []struct {
		field string
		v     time.Duration
	}{{"idle_timeout", e.IdleTimeout}, {"stream_idle_timeout", e.StreamIdleTimeout}, {"request_headers_timeout", e.RequestHeadersTimeout}} {
		if t.v <= 0 {
			bad(t.field, "must be a positive duration (an unbounded timeout is what it guards against)")
		}
	}
	if e.HeadersWithUnderscores != "reject" && e.HeadersWithUnderscores != "drop" {
		bad("headers_with_underscores", "must be reject or drop, got %q", e.HeadersWithUnderscores)
	}
	if e.UpstreamConnectionBuffer < 1<<10 || e.UpstreamConnectionBuffer > 64<<20 {
		bad("upstream_connection_buffer", "must be between 1KiB and 64MiB")
	}
	for _, n := range []struct {
		field string
		v     uint32
	}{{"upstream_max_connections", e.UpstreamMaxConnections}, {"upstream_max_pending_requests", e.UpstreamMaxPendingRequests}, {"upstream_max_requests", e.UpstreamMaxRequests}, {"retry_min_concurrency", e.RetryMinConcurrency}} {
		if n.v < 1 {
			bad(n.field, "must be at least 1")
		}
	}
	if e.MaxRequestsInFlight < 1 || e.MaxRequestsInFlight > MaxRequestsInFlightLimit {
		bad("max_requests_in_flight", "must be between 1 and %d", MaxRequestsInFlightLimit)
	}
	if e.RetryBudgetPercent <= 0 || e.RetryBudgetPercent > 100 {
		bad("retry_budget_percent", "must be above 0 and at most 100")
	}
	return errors.Join(errs...)
}
