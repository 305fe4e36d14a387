// Package contract is the one statement of what Envoy's configuration (built
// by xds/resources and envoy/bootstrap.yaml) and the ext_proc server
// (extproc/server) agree on: the names of shared resources, the metadata
// that tells the two ext_proc streams of a request apart, the dynamic
// metadata namespaces they exchange, and the processing modes the server may
// switch a request to. Both sides import it; neither spells these out.
package contract

import (
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/protobuf/proto"
)

// Names of resources that envoy/bootstrap.yaml, xds and extproc share.
const (
	ListenerName    = "ingress"
	RouteConfigName = "switchyard"
	// ExtProcCluster is the bootstrap's cluster that reaches ext_proc for
	// the router-level stream of each request, and for nothing else: its
	// circuit breaker is the node's bound on requests in flight.
	ExtProcCluster = "switchyard_extproc"
	// ExtProcAttemptCluster reaches the same ext_proc for each attempt's
	// stream and the access logs, with no such bound, so that a request
	// admitted is never refused halfway.
	ExtProcAttemptCluster = "switchyard_extproc_attempts"
	// RuntimeLayer is the bootstrap's RTDS layer that xds serves.
	RuntimeLayer = "switchyard"
	// MaxRequestsInFlightKey is the runtime key, in [RuntimeLayer], that
	// overrides [ExtProcCluster]'s request bound (Envoy's circuit breaker
	// runtime scheme circuit_breakers.<cluster>.<priority>.<setting>).
	MaxRequestsInFlightKey = "circuit_breakers." + ExtProcCluster + ".default.max_requests"
)

// EnvoyComponentLogLevels is Envoy's --component-log-level wherever it
// runs: the ext_proc filter logs a warning for each request whose stream
// fails, each refusal at the bound on requests in flight included, and a
// flood must not buy itself a log line per request. The access log keeps
// each such request's details.
const EnvoyComponentLogLevels = "ext_proc:error"

// PhaseHeader is the gRPC metadata key the per-attempt ext_proc filter sends
// (as initial_metadata), with value [PhaseUpstream], so the server can tell
// an attempt's stream from the router-level one of the same request.
const (
	PhaseHeader   = "x-switchyard-phase"
	PhaseUpstream = "upstream"
)

// LocalReplyHeader marks answers Envoy made itself (a local reply mapped to
// the OpenAI envelope); its value is the reply's response flags
// (%RESPONSE_FLAGS%), which tell ext_proc whose doing the reply was: a
// provider's failure, or Envoy's own overflow.
const LocalReplyHeader = "x-switchyard-envoy-reply"

// LocalReplyFailureHeader carries, on the same replies, why the last
// attempt's provider could not be reached: its transport's failure reason
// (%UPSTREAM_TRANSPORT_FAILURE_REASON%: a refused connection, a TLS
// error). ext_proc names it in the answer and to the health monitor; the
// client never sees the header.
const LocalReplyFailureHeader = "x-switchyard-envoy-failure"

// LocalReplyAttemptHeader carries, on the same replies, the number of the
// attempt the reply ends (%UPSTREAM_REQUEST_ATTEMPT_COUNT%): a retry whose
// provider has no address never opens an upstream stream, so ext_proc
// learns of that attempt only here.
const LocalReplyAttemptHeader = "x-switchyard-envoy-attempt"

// AnswerTimeoutHeader is the request header by which ext_proc bounds an
// answer as a whole, every attempt included (Envoy's
// x-envoy-upstream-rq-timeout-ms): answer_timeout for a non-streamed one,
// stream_timeout and a per-try idle timeout more for a stream, which
// ext_proc cuts itself first. The route itself has no timeout.
const AnswerTimeoutHeader = "x-envoy-upstream-rq-timeout-ms"

// Log names of Envoy's gRPC access logs to ext_proc. AttemptLogName is
// the router's upstream log of failed attempts. CutLogName is the
// connection manager's log of requests a timeout of Envoy's ended (flag
// UT or SI): once an answer has begun, Envoy resets the client's stream,
// which ext_proc cannot tell from the client leaving, and this entry is
// the only sign that the provider stalled.
const (
	AttemptLogName = "switchyard.attempts"
	CutLogName     = "switchyard.cuts"
)

// CutFlags are the response flags of [CutLogName]'s entries.
var CutFlags = []string{"UT", "SI"}

// RouteMetadataNamespace carries the per-request provider order from
// ext_proc to Envoy's priority-group cluster specifier, under
// [PriorityGroupsKey], and under [TranslatedForKey] the cluster whose
// provider the router-level reply already translated the request for.
const (
	RouteMetadataNamespace = "switchyard.route"
	PriorityGroupsKey      = "priority_groups"
	TranslatedForKey       = "translated_for"
	// ClientAPIKey is [ClientAnthropic] for a client that speaks
	// Anthropic's API, so that Envoy's own replies (no provider answered)
	// use Anthropic's error envelope even when the first attempt's
	// translation rewrote the path the client asked for.
	ClientAPIKey    = "client_api"
	ClientAnthropic = "anthropic"
)

// HedgeCluster names the composite cluster (and the priority group that
// holds it) through which a hedged request reaches provider a on its
// first attempt and provider b on its second: Envoy 1.40 does not pick
// the route's cluster again for a hedge (refresh_cluster_on_retry skips
// it), but a composite cluster picks its sub-cluster by the attempt's
// number, a hedge's included. Provider names hold no '/'.
func HedgeCluster(a, b string) string { return "hedge/" + a + "/" + b }

// AnsweredByHeader names, on the answer of a hedged request, the provider
// whose answer won the race, from the metadata of the host the router
// took the answer from (xds/resources' answeredBy filter): ext_proc must
// know which attempt's translator reads it. The client never sees it.
const AnsweredByHeader = "x-switchyard-answered-by"

// AccessLogMetadataNamespace carries what a request was and cost (tenant,
// app, key, route, models, provider, attempts, tokens, cost), from
// ext_proc's last message to Envoy's access log, which writes it whole as
// an object under the same name.
const AccessLogMetadataNamespace = "switchyard"

// RouteHeader names the policy route of a request that ext_proc has
// translated for its first attempt. The translation rewrites :path to the
// provider's, so Envoy can no longer find the route by the client's path:
// it finds it by this header, which ext_proc sets on every request it
// forwards (a client's own never survives that) and the route removes
// before the request leaves.
const RouteHeader = "x-switchyard-route"

// RouteRemovedHeaders are the request headers the route removes before
// the request leaves for a provider, ext_proc's router-level reply keeping
// them: [RouteHeader] and x-forwarded-proto, which Envoy must still see
// when it finds the route (it finds none for a request without
// x-forwarded-proto), and x-envoy-external-address, the client's address,
// which Envoy adds itself.
var RouteRemovedHeaders = []string{RouteHeader, "x-forwarded-proto", "x-envoy-external-address"}

// RouterMode is the router-level ext_proc filter's processing mode: the
// whole request body (the router needs the model), the response headers,
// and the whole response body unless the server switches to
// [StreamedResponseMode].
func RouterMode() *extprocv3.ProcessingMode {
	return &extprocv3.ProcessingMode{
		RequestHeaderMode:   extprocv3.ProcessingMode_SEND,
		RequestBodyMode:     extprocv3.ProcessingMode_BUFFERED,
		RequestTrailerMode:  extprocv3.ProcessingMode_SKIP,
		ResponseHeaderMode:  extprocv3.ProcessingMode_SEND,
		ResponseBodyMode:    extprocv3.ProcessingMode_BUFFERED,
		ResponseTrailerMode: extprocv3.ProcessingMode_SKIP,
	}
}

// StreamedResponseMode is the override the server sends in its reply to the
// response headers of a streamed answer, so each chunk is translated as it
// arrives. Envoy takes an override only when it equals one of the filter's
// allowed_override_modes field by field, so the mode is spelt out whole.
func StreamedResponseMode() *extprocv3.ProcessingMode {
	m := RouterMode()
	m.ResponseBodyMode = extprocv3.ProcessingMode_STREAMED
	return m
}

// AllowedOverrides are every mode the server may send as a mode_override;
// xds lists exactly these in the router-level filter's
// allowed_override_modes.
func AllowedOverrides() []*extprocv3.ProcessingMode {
	return []*extprocv3.ProcessingMode{StreamedResponseMode()}
}

// Allowed reports whether m is one of [AllowedOverrides].
func Allowed(m *extprocv3.ProcessingMode) bool {
	for _, a := range AllowedOverrides() {
		if proto.Equal(a, m) {
			return true
		}
	}
	return false
}
