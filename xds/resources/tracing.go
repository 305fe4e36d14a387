package resources

import (
	"net"
	"strconv"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	tracev3 "github.com/envoyproxy/go-control-plane/envoy/config/trace/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/switchyard/switchyard/configs/policy"
)

// TracingCluster is the cluster of the OTLP collector Envoy exports its
// spans to.
const TracingCluster = "switchyard_otel_collector"

// tracingServiceName names Envoy in its spans' resource (service.name);
// ext_proc's spans are "switchyard-extproc".
const tracingServiceName = "switchyard-envoy"

// exportTimeout bounds one export of Envoy's to the collector: a collector
// that does not answer costs Envoy its buffered spans (at most
// max_cache_size), never a request.
const exportTimeout = 5 * time.Second

// tracingFlushIntervalKey is the runtime key of how often Envoy's tracer
// exports what it buffered (5 s by default).
const tracingFlushIntervalKey = "tracing.opentelemetry.flush_interval_ms"

// tracingFlushInterval is ours: a trace shows in the viewer a second
// after its request, and the batches stay large under load, when the
// tracer also exports every few spans (tracing.opentelemetry.min_flush_spans).
const tracingFlushInterval = time.Second

// connectionTracing is the listener's tracing: Envoy's OpenTelemetry
// tracer, one server span per request and one client span per attempt
// (spawn_upstream_span), whose context goes to the provider (so a
// self-hosted model's spans join) and to ext_proc, in the metadata of the
// gRPC stream of each request, under which ext_proc hangs its own spans.
//
// Sampling is Envoy's, made when a request arrives: a client's
// traceparent decides for its trace (sampled or not), else random_sampling
// takes sample_ratio of requests. ext_proc follows that decision and also
// keeps, when the request is over, a request that failed, fell back or ran
// slow; Envoy's own span of such a request is there only if Envoy sampled
// it.
func connectionTracing(t *policy.Tracing) *hcmv3.HttpConnectionManager_Tracing {
	otel := &tracev3.OpenTelemetryConfig{ServiceName: tracingServiceName}
	if t.Protocol == policy.TraceHTTP {
		scheme := "http://"
		if t.TLS {
			scheme = "https://"
		}
		otel.HttpService = &corev3.HttpService{HttpUri: &corev3.HttpUri{
			Uri:              scheme + net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) + "/v1/traces",
			HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: TracingCluster},
			Timeout:          dur(exportTimeout),
		}}
	} else {
		otel.GrpcService = &corev3.GrpcService{
			TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: TracingCluster, Authority: t.Host}},
			Timeout:         dur(exportTimeout),
		}
	}
	return &hcmv3.HttpConnectionManager_Tracing{
		RandomSampling:    &typev3.Percent{Value: 100 * t.SampleRatio},
		SpawnUpstreamSpan: wrapBool(true),
		Provider: &tracev3.Tracing_Http{
			Name:       "envoy.tracers.opentelemetry",
			ConfigType: &tracev3.Tracing_Http_TypedConfig{TypedConfig: mustAny(otel)},
		},
	}
}

// tracingCluster reaches the collector: HTTP/2 for OTLP/gRPC, HTTP/1.1
// for OTLP/HTTP, TLS with SNI when asked.
func tracingCluster(t *policy.Tracing, o Options) *clusterv3.Cluster {
	proto := &httpv3.HttpProtocolOptions{}
	if t.Protocol == policy.TraceHTTP {
		proto.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}},
		}}
	} else {
		proto.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
		}}
	}
	c := &clusterv3.Cluster{
		Name:                 TracingCluster,
		ConnectTimeout:       dur(policy.DefaultConnectTimeout),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS},
		DnsLookupFamily:      clusterv3.Cluster_V4_PREFERRED,
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: TracingCluster,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: socketAddress(t.Host, t.Port), Hostname: t.Host}},
			}}}},
		},
		TypedExtensionProtocolOptions: map[string]*anyMsg{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(proto),
		},
	}
	if t.TLS {
		c.TransportSocket = upstreamTLS(&policy.Provider{Host: t.Host}, o)
	}
	return c
}
