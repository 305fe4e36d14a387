package resources

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	celv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/filters/cel/v3"
	grpclogv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/grpc/v3"
	streamlogv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/composite/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	localrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	codecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
)

// Filter names, also the keys of per-route filter configs.
const (
	extProcFilterName = "envoy.filters.http.ext_proc"
	bufferFilterName  = "envoy.filters.http.buffer"
	// attemptFilterName names the per-attempt ext_proc instance apart from
	// the router-level one: per-route filter configs are keyed by name, and
	// the router level's per-route modes must not reach the attempts.
	attemptFilterName = "switchyard.ext_proc.attempt"
	// answeredByFilterName names the header_mutation that marks a hedged
	// request's answer with its provider (answeredBy).
	answeredByFilterName = "switchyard.hedge.answered_by"
	requestIDFilterName  = "switchyard.request_id"
	localRLFilterName    = "envoy.filters.http.local_ratelimit"
	// clientRLFilterName is the bucket of each client credential, ahead of
	// the listener's.
	clientRLFilterName = "switchyard.client_ratelimit"
	// clientDescriptor keys a client's bucket by its credential.
	clientDescriptor = "client_credential"
)

const (
	// extProcMessageTimeout bounds one ext_proc exchange; ours take
	// microseconds, so this only fires when ext_proc is wedged.
	extProcMessageTimeout = 10 * time.Second
)

// underscores maps gateway.edge.headers_with_underscores to Envoy's action.
var underscores = map[string]corev3.HttpProtocolOptions_HeadersWithUnderscoresAction{
	"reject": corev3.HttpProtocolOptions_REJECT_REQUEST,
	"drop":   corev3.HttpProtocolOptions_DROP_HEADER,
}

func connectionManager(p *policy.Policy, o Options) *hcmv3.HttpConnectionManager {
	e := p.Gateway.Edge
	filters := []*hcmv3.HttpFilter{orderedRequestID()}
	if l := p.Gateway.LocalRateLimit; l.RequestsPerSecond > 0 {
		filters = append(filters,
			&hcmv3.HttpFilter{Name: clientRLFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(clientRateLimit(l.PerClient))}},
			&hcmv3.HttpFilter{Name: localRLFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(localRateLimit(l))}},
		)
	}
	filters = append(filters,
		// The whole body is read before ext_proc's filter opens its stream,
		// so a refusal there (the bound on requests in flight) answers a
		// complete request and keeps the client's HTTP/1.1 connection: an
		// answer before the body was read would close it, and an overloaded
		// gateway would pay a new connection for every refusal too. ext_proc
		// takes bodies buffered anyway.
		&hcmv3.HttpFilter{Name: bufferFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&bufferv3.Buffer{MaxRequestBytes: u32(uint32(p.Gateway.MaxRequestBytes))})}},
		&hcmv3.HttpFilter{Name: extProcFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(routerExtProc(p))}},
	)
	if hedges(p) {
		filters = append(filters, answeredBy())
	}
	filters = append(filters, &hcmv3.HttpFilter{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(router())}})
	m := &hcmv3.HttpConnectionManager{
		StatPrefix: "ingress",
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: contract.RouteConfigName,
		}},
		HttpFilters: filters,
		// Silence on a client stream is bounded, not its length: a long
		// generation that keeps sending is never cut.
		StreamIdleTimeout: dur(e.StreamIdleTimeout),
		// The whole-request timeout would cut long streams; idle timeouts
		// and per-try timeouts guard instead.
		RequestTimeout:        dur(0),
		RequestHeadersTimeout: dur(e.RequestHeadersTimeout),
		// The gateway is the edge: Envoy makes a fresh x-request-id for
		// every request, so clients cannot collide with or spoof another's.
		UseRemoteAddress:           wrapBool(true),
		ServerName:                 "switchyard",
		ServerHeaderTransformation: hcmv3.HttpConnectionManager_OVERWRITE,
		LocalReplyConfig:           localReplies(p),
		CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{
			IdleTimeout:                  dur(e.IdleTimeout),
			HeadersWithUnderscoresAction: underscores[e.HeadersWithUnderscores],
		},
		// Envoy's defaults (2^31 streams, 256 MiB windows) suit a trusted
		// peer, not the Internet.
		Http2ProtocolOptions: &corev3.Http2ProtocolOptions{
			MaxConcurrentStreams:        u32(e.HTTP2MaxConcurrentStreams),
			InitialStreamWindowSize:     u32(uint32(e.HTTP2InitialStreamWindow)),
			InitialConnectionWindowSize: u32(uint32(e.HTTP2InitialConnectionWindow)),
		},
		NormalizePath:                wrapBool(true),
		MergeSlashes:                 true,
		PathWithEscapedSlashesAction: hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT,
	}
	m.AccessLog = []*accesslogv3.AccessLog{cutLog()}
	if o.AccessLog {
		m.AccessLog = append(m.AccessLog, accessLog(p.Gateway.Tracing != nil))
	}
	if t := p.Gateway.Tracing; t != nil {
		m.Tracing = connectionTracing(t)
	}
	return m
}

func localRateLimit(l policy.LocalRateLimit) *localrlv3.LocalRateLimit {
	full := &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED}}
	return &localrlv3.LocalRateLimit{
		StatPrefix: "ingress_rate_limit",
		TokenBucket: &typev3.TokenBucket{
			MaxTokens:     uint32(l.Burst),
			TokensPerFill: u32(uint32(l.RequestsPerSecond)),
			FillInterval:  dur(time.Second),
		},
		FilterEnabled:  full,
		FilterEnforced: full,
	}
}

// clientRateLimit gives each client credential (Authorization, or
// X-Api-Key for Anthropic clients) its own bucket, ahead of the listener's,
// so a client flooding the gateway runs out of its own tokens and the
// listener's bucket stays for the others. It runs before authentication:
// the credential is the only name a client has yet. Requests without one
// share this filter's default bucket; a client sending a new made-up
// credential each time gets a fresh bucket each time, which the listener's
// bucket, the overload manager and ext_proc's admission still bound.
// Envoy keeps at most MaxClients buckets, least recently used first out.
func clientRateLimit(l policy.ClientRateLimit) *localrlv3.LocalRateLimit {
	full := &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED}}
	bucket := func() *typev3.TokenBucket {
		return &typev3.TokenBucket{MaxTokens: uint32(l.Burst), TokensPerFill: u32(uint32(l.RequestsPerSecond)), FillInterval: dur(time.Second)}
	}
	byHeader := func(name string) *routev3.RateLimit {
		return &routev3.RateLimit{Actions: []*routev3.RateLimit_Action{{ActionSpecifier: &routev3.RateLimit_Action_RequestHeaders_{
			RequestHeaders: &routev3.RateLimit_Action_RequestHeaders{HeaderName: name, DescriptorKey: clientDescriptor},
		}}}}
	}
	return &localrlv3.LocalRateLimit{
		StatPrefix:     "client_rate_limit",
		TokenBucket:    bucket(),
		FilterEnabled:  full,
		FilterEnforced: full,
		// A blank value makes one bucket per distinct credential.
		Descriptors: []*ratelimitv3.LocalRateLimitDescriptor{{
			Entries:     []*ratelimitv3.RateLimitDescriptor_Entry{{Key: clientDescriptor}},
			TokenBucket: bucket(),
		}},
		RateLimits:                      []*routev3.RateLimit{byHeader("authorization"), byHeader("x-api-key")},
		AlwaysConsumeDefaultTokenBucket: wrapBool(false),
		MaxDynamicDescriptors:           u32(uint32(l.MaxClients)),
	}
}

// routerExtProc is the router-level ext_proc filter: it sees the whole
// request and the response of the last attempt. Response bodies start
// buffered; ext_proc switches a streamed answer to STREAMED.
func routerExtProc(p *policy.Policy) *extprocv3.ExternalProcessor {
	return &extprocv3.ExternalProcessor{
		GrpcService: &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: contract.ExtProcCluster}}},
		// Fail closed: without ext_proc nothing is authenticated.
		FailureModeAllow:     false,
		StatusOnError:        &typev3.HttpStatus{Code: typev3.StatusCode_ServiceUnavailable},
		ProcessingMode:       contract.RouterMode(),
		AllowModeOverride:    true,
		AllowedOverrideModes: contract.AllowedOverrides(),
		MessageTimeout:       dur(extProcMessageTimeout),
		MaxMessageTimeout:    dur(maxMessageTimeout(p)),
		// x-envoy-max-retries is how ext_proc bounds the attempts of one
		// request; Envoy only accepts x-envoy-* mutations when allowed. The
		// request translated for its first attempt carries the provider's
		// path and host.
		MutationRules: &mutationrulesv3.HeaderMutationRules{AllowAllRouting: wrapBool(true), AllowEnvoy: wrapBool(true)},
		MetadataOptions: &extprocv3.MetadataOptions{
			ReceivingNamespaces: &extprocv3.MetadataOptions_MetadataNamespaces{Untyped: []string{contract.RouteMetadataNamespace, contract.AccessLogMetadataNamespace}},
		},
	}
}

// maxMessageTimeout is the longest ext_proc may ask Envoy to wait for one
// reply: a minute, or on a route with a hybrid mode its answer_timeout,
// since ext_proc answers a hybrid request itself, once every call it
// makes has answered (extproc/server/hybrid.go).
func maxMessageTimeout(p *policy.Policy) time.Duration {
	d := time.Minute
	for _, r := range p.Routes {
		if r.Hybrid != nil {
			d = max(d, r.AnswerTimeout)
		}
	}
	return d
}

// attemptExtProc is the per-attempt (upstream) ext_proc filter, for the
// attempts the router-level reply did not translate (unlessTranslated):
// only the request headers go to ext_proc, which answers with the whole
// translated request (CONTINUE_AND_REPLACE), so the body is never sent to
// it, and that is the attempt's one message. ext_proc learns how each
// attempt ended (health, breakers, the list of failed attempts) without
// another: the last from the answer the router-level filter sees, the ones
// Envoy retried from the router's upstream log (attemptLog).
func attemptExtProc() *extprocv3.ExternalProcessor {
	return &extprocv3.ExternalProcessor{
		GrpcService: &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: contract.ExtProcAttemptCluster}},
			InitialMetadata: []*corev3.HeaderValue{{Key: contract.PhaseHeader, Value: contract.PhaseUpstream}},
		},
		FailureModeAllow: false,
		StatusOnError:    &typev3.HttpStatus{Code: typev3.StatusCode_ServiceUnavailable},
		ProcessingMode: &extprocv3.ProcessingMode{
			RequestHeaderMode:   extprocv3.ProcessingMode_SEND,
			RequestBodyMode:     extprocv3.ProcessingMode_NONE,
			RequestTrailerMode:  extprocv3.ProcessingMode_SKIP,
			ResponseHeaderMode:  extprocv3.ProcessingMode_SKIP,
			ResponseBodyMode:    extprocv3.ProcessingMode_NONE,
			ResponseTrailerMode: extprocv3.ProcessingMode_SKIP,
		},
		MessageTimeout: dur(extProcMessageTimeout),
		// Which attempt this is and which cluster Envoy picked for it: a
		// failed attempt's stream may be cancelled before it reaches
		// ext_proc, so ext_proc must not number attempts by counting.
		RequestAttributes: []string{"upstream.request_attempt_count", "xds.cluster_name"},
		// The translated request carries a new path, host and key.
		MutationRules: &mutationrulesv3.HeaderMutationRules{AllowAllRouting: wrapBool(true), AllowEnvoy: wrapBool(true)},
		// ext_proc sets the content-length of the body it wrote; without
		// this Envoy would drop it and send the body chunked.
		AllowContentLengthHeader: true,
	}
}

// unlessTranslated runs the per-attempt filter on every attempt but a
// first one the router-level reply already translated, which so costs no
// message of its own ([contract.FirstAttemptTranslated]). The filter is
// made only for the attempts that run it: made and then skipped (a
// match_delegate's skip) it cost Envoy about 17,000 instructions a
// request of the 36,700 the skip took (make bench-instructions,
// docs/BENCHMARKS.md). The composite filter that makes it runs, on the
// first attempt, a header mutation that changes nothing instead. It fails
// closed: any attempt the condition does not hold for, or cannot be
// evaluated for, gets the per-attempt filter, which translates it or
// refuses it.
func unlessTranslated(f *extprocv3.ExternalProcessor) *matchingv3.ExtensionWithMatcher {
	cel := &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate{
		Input: &xdscorev3.TypedExtensionConfig{Name: "envoy.matching.inputs.cel_data_input", TypedConfig: mustAny(&xdsmatcherv3.HttpAttributesCelMatchInput{})},
		Matcher: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate_CustomMatch{CustomMatch: &xdscorev3.TypedExtensionConfig{
			Name: "envoy.matching.matchers.cel_matcher",
			TypedConfig: mustAny(&xdsmatcherv3.CelMatcher{ExprMatch: &xdstypev3.CelExpression{
				CelExprParsed: contract.FirstAttemptTranslated(),
			}}),
		}},
	}
	execute := func(filter string, config proto.Message) *xdsmatcherv3.Matcher_OnMatch {
		return &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: &xdscorev3.TypedExtensionConfig{
			Name:        "execute",
			TypedConfig: mustAny(&compositev3.ExecuteFilterAction{TypedConfig: &corev3.TypedExtensionConfig{Name: filter, TypedConfig: mustAny(config)}}),
		}}}
	}
	return &matchingv3.ExtensionWithMatcher{
		ExtensionConfig: &corev3.TypedExtensionConfig{Name: "envoy.filters.http.composite", TypedConfig: mustAny(&compositev3.Composite{})},
		XdsMatcher: &xdsmatcherv3.Matcher{
			MatcherType: &xdsmatcherv3.Matcher_MatcherList_{MatcherList: &xdsmatcherv3.Matcher_MatcherList{
				Matchers: []*xdsmatcherv3.Matcher_MatcherList_FieldMatcher{{
					Predicate: &xdsmatcherv3.Matcher_MatcherList_Predicate{MatchType: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate_{SinglePredicate: cel}},
					OnMatch:   execute("envoy.filters.http.header_mutation", &headermutationv3.HeaderMutation{}),
				}},
			}},
			OnNoMatch: execute(extProcFilterName, f),
		},
	}
}

func router() *routerv3.Router {
	return &routerv3.Router{
		SuppressEnvoyHeaders: true,
		UpstreamLog:          []*accesslogv3.AccessLog{attemptLog()},
		UpstreamHttpFilters: []*hcmv3.HttpFilter{
			{Name: attemptFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(unlessTranslated(attemptExtProc()))}},
			{Name: "envoy.filters.http.upstream_codec", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&codecv3.UpstreamCodec{})}},
		},
	}
}

// answeredBy names, on the answer of a hedged request, the provider whose
// answer won (contract.AnsweredByHeader), overwriting any header of that
// name a provider sent. It stands after the router-level ext_proc, so the
// answer passes it first, once the router has made the winner the
// request's upstream host, whose metadata names its provider (Cluster). A
// formatter in an attempt's own upstream filters would read the request's
// latest attempt instead, and ext_proc there crashes Envoy 1.40 on a
// hedge's failing attempt. Disabled, and enabled with its mutation on the
// routes that hedge (answeredByRoute).
func answeredBy() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name:       answeredByFilterName,
		Disabled:   true,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&headermutationv3.HeaderMutation{})},
	}
}

// orderedRequestID gives each request an ID that begins with its start
// time in microseconds, then Envoy's own random UUID
// ("1796487753184029-adf25ba9-ab07-4a60-bbec-9c6f2b184be3"). With Envoy's
// UUID alone each usage record landed on a random page of the ledger's
// request_id index, and a record's cost grew with the table: 26 µs over
// its first 50,000 rows, 38 at 300,000, against a flat 20 for IDs in time
// order (docs/BENCHMARKS.md). It is the first filter, so the access log,
// ext_proc, the ledger and the client's x-request-id all name the request
// alike; Envoy's tracing has already sampled on the UUID, uniformly.
func orderedRequestID() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: requestIDFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&headermutationv3.HeaderMutation{
		Mutations: &headermutationv3.Mutations{RequestMutations: []*mutationrulesv3.HeaderMutation{{Action: &mutationrulesv3.HeaderMutation_Append{Append: &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: "x-request-id", Value: "%START_TIME(%s%6f)%-%STREAM_ID%"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}}}}},
	})}}
}

// answeredByRoute enables answeredBy on a route.
func answeredByRoute() *routev3.FilterConfig {
	return &routev3.FilterConfig{Config: mustAny(&headermutationv3.HeaderMutationPerRoute{Mutations: &headermutationv3.Mutations{
		ResponseMutations: []*mutationrulesv3.HeaderMutation{{Action: &mutationrulesv3.HeaderMutation_Append{Append: &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: contract.AnsweredByHeader, Value: "%UPSTREAM_METADATA(" + providerMetadataNamespace + ":provider)%"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}}}},
	}})}
}

// attemptOutcomeHeaders are the provider response headers ext_proc reads
// from a failed attempt: when to retry, and the provider's rate-limit
// figures (filters/router/health).
var attemptOutcomeHeaders = []string{
	"retry-after", "retry-after-ms",
	"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens",
	"anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining",
	"anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining",
	"anthropic-ratelimit-input-tokens-limit", "anthropic-ratelimit-input-tokens-remaining",
	"anthropic-ratelimit-output-tokens-limit", "anthropic-ratelimit-output-tokens-remaining",
}

// attemptLog sends the router's upstream log of failed attempts to ext_proc
// over the gRPC access-log service: Envoy sends it without holding the
// request, so the per-attempt filter needs no response message. Only
// failures are logged (a status of 400 or more, none, or a response flag
// such as a reset or timeout): a successful attempt is always the last,
// whose answer ext_proc sees anyway. Each entry is flushed at once, so the
// outcome is there before the answer it was retried into is.
func attemptLog() *accesslogv3.AccessLog {
	failed := &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_OrFilter{OrFilter: &accesslogv3.OrFilter{
		Filters: []*accesslogv3.AccessLogFilter{
			{FilterSpecifier: &accesslogv3.AccessLogFilter_StatusCodeFilter{StatusCodeFilter: &accesslogv3.StatusCodeFilter{
				Comparison: &accesslogv3.ComparisonFilter{Op: accesslogv3.ComparisonFilter_GE, Value: &corev3.RuntimeUInt32{DefaultValue: 400, RuntimeKey: "switchyard.attempt_log.min_status"}},
			}}},
			{FilterSpecifier: &accesslogv3.AccessLogFilter_StatusCodeFilter{StatusCodeFilter: &accesslogv3.StatusCodeFilter{
				Comparison: &accesslogv3.ComparisonFilter{Op: accesslogv3.ComparisonFilter_EQ, Value: &corev3.RuntimeUInt32{DefaultValue: 0, RuntimeKey: "switchyard.attempt_log.no_status"}},
			}}},
			// No flags listed: any response flag matches.
			{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{}}},
		},
	}}}
	return &accesslogv3.AccessLog{
		Name:   "envoy.access_loggers.http_grpc",
		Filter: failed,
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: mustAny(&grpclogv3.HttpGrpcAccessLogConfig{
			CommonConfig:                   grpcLogTo(contract.AttemptLogName),
			AdditionalRequestHeadersToLog:  []string{"x-request-id"},
			AdditionalResponseHeadersToLog: attemptOutcomeHeaders,
		})},
	}
}

// cutLog sends ext_proc the requests a timeout of Envoy's ended
// ([contract.CutLogName]), off the request path like [attemptLog].
func cutLog() *accesslogv3.AccessLog {
	return &accesslogv3.AccessLog{
		Name: "envoy.access_loggers.http_grpc",
		Filter: &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{
			ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{Flags: contract.CutFlags},
		}},
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: mustAny(&grpclogv3.HttpGrpcAccessLogConfig{
			CommonConfig:                  grpcLogTo(contract.CutLogName),
			AdditionalRequestHeadersToLog: []string{"x-request-id"},
		})},
	}
}

// grpcLogTo is the gRPC access-log service of ext_proc under a log name,
// each entry flushed at once.
func grpcLogTo(name string) *grpclogv3.CommonGrpcAccessLogConfig {
	return &grpclogv3.CommonGrpcAccessLogConfig{
		LogName:             name,
		GrpcService:         &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: contract.ExtProcAttemptCluster}}},
		TransportApiVersion: corev3.ApiVersion_V3,
		BufferSizeBytes:     wrapperspb.UInt32(0),
		BufferFlushInterval: dur(100 * time.Millisecond),
	}
}

// localReplies rewrites Envoy's own replies (no healthy upstream, local
// rate limit, timeouts, a body over the limit) into the error envelope of
// the client's API: Anthropic's for Anthropic's clients (the Messages
// routes, and the model list asked with anthropic-version), OpenAI's for
// the rest. Some never reach ext_proc (the token bucket and the overload
// manager answer before it runs), so the envelope is Envoy's to get
// right. They are marked so ext_proc does not mistake them for a
// provider's answer. ext_proc's own replies are local replies too, so no
// mapper may match them: ext_proc never answers 413 (Envoy enforces the
// body limit) and its replies carry no response flag.
func localReplies(p *policy.Policy) *hcmv3.LocalReplyConfig {
	byFlags := func(flags ...string) *accesslogv3.AccessLogFilter {
		return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{
			ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{Flags: flags},
		}}
	}
	tooLarge := &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_StatusCodeFilter{StatusCodeFilter: &accesslogv3.StatusCodeFilter{
		Comparison: &accesslogv3.ComparisonFilter{Op: accesslogv3.ComparisonFilter_EQ, Value: &corev3.RuntimeUInt32{DefaultValue: 413, RuntimeKey: "switchyard.local_reply.too_large"}},
	}}}
	// Each kind of reply: what selects it, its status (for Anthropic's
	// error type), message, and OpenAI type and code.
	replies := []struct {
		filter             *accesslogv3.AccessLogFilter
		status             int
		message, typ, code string
		retryAfter         string
	}{
		// The overload manager refusing a request: the gateway is at
		// capacity, and says when to come back.
		{byFlags("OM"), http.StatusServiceUnavailable, "the gateway is at capacity; retry after a moment", "service_unavailable", "gateway_overloaded", "1"},
		// The bound on requests in flight (gateway.edge.max_requests_in_flight),
		// met before ext_proc hears of the request.
		{extProcFailed(true), http.StatusServiceUnavailable, "the gateway is at capacity (requests in flight); retry after a moment", "service_unavailable", "gateway_overloaded", "1"},
		// ext_proc unreachable or its stream broken: fail closed.
		{extProcFailed(false), http.StatusServiceUnavailable, "the gateway cannot process requests at the moment; retry after a moment", "service_unavailable", "gateway_unavailable", "1"},
		// The token buckets flag their refusal only after answering, so the
		// reply is known by its details.
		{orFilter(byFlags("RL"), detailsFilter("local_rate_limited")), http.StatusTooManyRequests, "the gateway's request rate limit was exceeded; retry after a moment", "rate_limit_error", "rate_limit_exceeded", ""},
		{byFlags("UT", "SI"), http.StatusGatewayTimeout, "%LOCAL_REPLY_BODY%", "upstream_error", "upstream_timeout", ""},
		{byFlags("UH", "UF", "UO", "NR", "URX", "UC", "UPE", "NC", "LR", "UMSDR"), http.StatusServiceUnavailable, "%LOCAL_REPLY_BODY%", "upstream_error", "upstream_unavailable", ""},
		// A request Envoy's codec refused (malformed, or a header name with
		// an underscore) is the client's doing, not a provider's.
		{byFlags("DPE"), http.StatusBadRequest, "%LOCAL_REPLY_BODY%", "invalid_request_error", "bad_request", ""},
		{tooLarge, http.StatusRequestEntityTooLarge, "the request body is larger than the gateway's limit of " + strconv.FormatInt(p.Gateway.MaxRequestBytes, 10) + " bytes", "invalid_request_error", "request_too_large", ""},
	}
	anthropicClient := anthropicClients(p)
	var mappers []*hcmv3.ResponseMapper
	for _, r := range replies {
		if anthropicClient != nil {
			body := map[string]any{"type": "error", "error": map[string]any{"type": anthropicapi.ErrorType(r.status), "message": r.message}}
			mappers = append(mappers, replyMapper(andFilter(r.filter, anthropicClient), body, r.retryAfter))
		}
		body := map[string]any{"error": map[string]any{"message": r.message, "type": r.typ, "param": nil, "code": r.code}}
		mappers = append(mappers, replyMapper(r.filter, body, r.retryAfter))
	}
	return &hcmv3.LocalReplyConfig{Mappers: mappers}
}

// replyMapper answers the replies filter selects with body, marked as
// Envoy's, with retry-after when given.
func replyMapper(filter *accesslogv3.AccessLogFilter, body map[string]any, retryAfter string) *hcmv3.ResponseMapper {
	m := &hcmv3.ResponseMapper{
		Filter:             filter,
		BodyFormatOverride: jsonFormat(body),
		HeadersToAdd: []*corev3.HeaderValueOption{{
			// The flags tell ext_proc whose doing the reply was (a
			// provider's failure, or Envoy's own overflow).
			Header:       &corev3.HeaderValue{Key: contract.LocalReplyHeader, Value: "%RESPONSE_FLAGS%"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}, {
			Header:       &corev3.HeaderValue{Key: contract.LocalReplyFailureHeader, Value: "%UPSTREAM_TRANSPORT_FAILURE_REASON%"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}, {
			Header:       &corev3.HeaderValue{Key: contract.LocalReplyAttemptHeader, Value: "%UPSTREAM_REQUEST_ATTEMPT_COUNT%"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}},
	}
	if retryAfter != "" {
		m.HeadersToAdd = append(m.HeadersToAdd, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: "retry-after", Value: retryAfter},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return m
}

// anthropicClients selects the requests of Anthropic's clients, as
// filters.Exchange.SpeaksAnthropic tells them apart: any request on a
// Messages route, and one on the model list that sent anthropic-version;
// nil when the policy has neither route.
func anthropicClients(p *policy.Policy) *accesslogv3.AccessLogFilter {
	var messages, models []string
	for _, r := range p.Routes {
		switch r.API {
		case policy.APIMessages, policy.APICountTokens:
			messages = append(messages, regexp.QuoteMeta(r.Path))
		case policy.APIModels:
			models = append(models, regexp.QuoteMeta(r.Path))
		}
	}
	var either []*accesslogv3.AccessLogFilter
	if len(messages) > 0 {
		// The path as Envoy matched it, with its query string, for replies
		// before ext_proc ran (the token buckets); after, ext_proc's mark,
		// since translating the first attempt may have rewritten the path.
		either = append(either, pathFilter(`^(?:`+strings.Join(messages, "|")+`)(?:\?.*)?$`), anthropicMarked())
	}
	if len(models) > 0 {
		version := &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_HeaderFilter{HeaderFilter: &accesslogv3.HeaderFilter{
			Header: &routev3.HeaderMatcher{Name: "anthropic-version", HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}},
		}}}
		either = append(either, andFilter(pathFilter(`^(?:`+strings.Join(models, "|")+`)(?:[/?].*)?$`), version))
	}
	switch len(either) {
	case 0:
		return nil
	case 1:
		return either[0]
	}
	return orFilter(either...)
}

// anthropicMarked selects the requests ext_proc marked as an Anthropic
// client's in the route metadata ([contract.ClientAPIKey]).
func anthropicMarked() *accesslogv3.AccessLogFilter {
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_MetadataFilter{MetadataFilter: &accesslogv3.MetadataFilter{
		Matcher: &matcherv3.MetadataMatcher{
			Filter: contract.RouteMetadataNamespace,
			Path:   []*matcherv3.MetadataMatcher_PathSegment{{Segment: &matcherv3.MetadataMatcher_PathSegment_Key{Key: contract.ClientAPIKey}}},
			Value: &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
				MatchPattern: &matcherv3.StringMatcher_Exact{Exact: contract.ClientAnthropic},
			}}},
		},
		MatchIfKeyNotFound: wrapBool(false),
	}}}
}

func pathFilter(re string) *accesslogv3.AccessLogFilter {
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_HeaderFilter{HeaderFilter: &accesslogv3.HeaderFilter{
		Header: &routev3.HeaderMatcher{Name: ":path", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}},
		}}},
	}}}
}

// detailsFilter selects the replies whose response code details are
// details.
func detailsFilter(details string) *accesslogv3.AccessLogFilter {
	return celFilter("response.code_details == " + strconv.Quote(details))
}

// extProcFailed selects the replies of the router-level ext_proc filter
// failing closed (status_on_error): its stream to ext_proc could not be
// opened or broke. overflow selects those the cluster's request breaker
// refused, the bound on requests in flight, and the others.
func extProcFailed(overflow bool) *accesslogv3.AccessLogFilter {
	cond := `response.code_details.startsWith("ext_proc_error_") && response.code_details.contains("overflow")`
	if !overflow {
		cond = `response.code_details.startsWith("ext_proc_error_") && !response.code_details.contains("overflow")`
	}
	return celFilter(cond)
}

func celFilter(expr string) *accesslogv3.AccessLogFilter {
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ExtensionFilter{ExtensionFilter: &accesslogv3.ExtensionFilter{
		Name:       "envoy.access_loggers.extension_filters.cel",
		ConfigType: &accesslogv3.ExtensionFilter_TypedConfig{TypedConfig: mustAny(&celv3.ExpressionFilter{Expression: expr})},
	}}}
}

func orFilter(fs ...*accesslogv3.AccessLogFilter) *accesslogv3.AccessLogFilter {
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_OrFilter{OrFilter: &accesslogv3.OrFilter{Filters: fs}}}
}

func andFilter(fs ...*accesslogv3.AccessLogFilter) *accesslogv3.AccessLogFilter {
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_AndFilter{AndFilter: &accesslogv3.AndFilter{Filters: fs}}}
}

func jsonFormat(m map[string]any) *corev3.SubstitutionFormatString {
	return &corev3.SubstitutionFormatString{
		Format:      &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: mustStruct(m)},
		ContentType: "application/json",
	}
}

// accessLog is the JSON line of each request; with tracing on it names
// the request's trace.
func accessLog(traced bool) *accesslogv3.AccessLog {
	fields := map[string]any{
		"time":        "%START_TIME%",
		"request_id":  "%REQ(X-REQUEST-ID)%",
		"method":      "%REQ(:METHOD)%",
		"path":        "%REQ(:PATH)%",
		"status":      "%RESPONSE_CODE%",
		"flags":       "%RESPONSE_FLAGS%",
		"details":     "%RESPONSE_CODE_DETAILS%",
		"duration_ms": "%DURATION%",
		"upstream":    "%UPSTREAM_CLUSTER%",
		"attempts":    "%UPSTREAM_REQUEST_ATTEMPT_COUNT%",
		"bytes_sent":  "%BYTES_SENT%",
	}
	// Who called and what it cost, from ext_proc's dynamic metadata, as one
	// object; absent (null) when the client left before the answer's end.
	// One lookup of the namespace costs Envoy about 41,000 instructions a
	// request; a lookup per key cost about 17,500 each, 210,000 for the
	// twelve, more than a bare hop's whole request (make
	// bench-instructions, docs/BENCHMARKS.md).
	fields[contract.AccessLogMetadataNamespace] = "%DYNAMIC_METADATA(" + contract.AccessLogMetadataNamespace + ")%"
	if traced {
		fields["trace_id"] = "%TRACE_ID%"
	}
	return &accesslogv3.AccessLog{
		Name: "envoy.access_loggers.stdout",
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: mustAny(&streamlogv3.StdoutAccessLog{
			AccessLogFormat: &streamlogv3.StdoutAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
				Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: mustStruct(fields)},
			}},
		})},
	}
}
