package resources

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	runtimev3 "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
)

// Options are settings of the control plane process, not of the policy.
type Options struct {
	// AccessLog enables Envoy's JSON access log on stdout.
	AccessLog bool
	// CACertFile is the trust bundle for https providers.
	CACertFile string
}

// providerMetadataNamespace holds, on a provider's cluster and host, the
// provider's name (and on the cluster its kind).
const providerMetadataNamespace = "switchyard"

// DefaultCACertFile is where Debian and Envoy's image keep the system CAs.
const DefaultCACertFile = "/etc/ssl/certs/ca-certificates.crt"

// Snapshot builds a consistent snapshot of p, versioned by the policy.
func Snapshot(p *policy.Policy, o Options) (*cache.Snapshot, error) {
	clusters := make([]types.Resource, 0, len(p.Providers))
	for _, pr := range p.Providers {
		clusters = append(clusters, Cluster(pr, p.Gateway.Edge, o))
	}
	for _, c := range hedgeClusters(p) {
		clusters = append(clusters, c)
	}
	if t := p.Gateway.Tracing; t != nil {
		clusters = append(clusters, tracingCluster(t, o))
	}
	snap, err := cache.NewSnapshot(p.Version, map[resource.Type][]types.Resource{
		resource.ClusterType:  clusters,
		resource.RouteType:    {RouteConfig(p)},
		resource.ListenerType: {Listener(p, o)},
		resource.RuntimeType:  {Runtime(p)},
	})
	if err != nil {
		return nil, err
	}
	if err := snap.Consistent(); err != nil {
		return nil, err
	}
	return snap, nil
}

// Runtime is the bootstrap's RTDS layer: what the policy changes in
// resources the bootstrap defines, today the bound on requests in flight
// (the router-level ext_proc cluster's circuit breaker). Envoy reads a
// breaker's runtime key at each request, so a new bound holds at once.
func Runtime(p *policy.Policy) *runtimev3.Runtime {
	layer := map[string]any{contract.MaxRequestsInFlightKey: float64(p.Gateway.Edge.MaxRequestsInFlight)}
	if p.Gateway.Tracing != nil {
		layer[tracingFlushIntervalKey] = float64(tracingFlushInterval.Milliseconds())
	}
	return &runtimev3.Runtime{Name: contract.RuntimeLayer, Layer: mustStruct(layer)}
}

func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

// Cluster is the cluster of one provider: DNS-resolved, TLS with SNI for
// https, with its own connection bounds and protocol (gateway.edge's by
// default), and the edge's retry budget and read-ahead bound.
func Cluster(p *policy.Provider, e policy.Edge, o Options) *clusterv3.Cluster {
	c := &clusterv3.Cluster{
		Name:                 p.Cluster,
		ConnectTimeout:       dur(p.ConnectTimeout),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS},
		DnsLookupFamily:      clusterv3.Cluster_V4_PREFERRED,
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: p.Cluster,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address:  socketAddress(p.Host, p.Port),
					Hostname: p.Host,
				}},
				// The host names its provider: a hedge's composite cluster
				// reaches two, and the winner is named by its host
				// (answeredBy).
				Metadata: &corev3.Metadata{FilterMetadata: map[string]*structMsg{
					providerMetadataNamespace: mustStruct(map[string]any{"provider": p.Name}),
				}},
			}}}},
		},
		PerConnectionBufferLimitBytes: u32(uint32(e.UpstreamConnectionBuffer)),
		CircuitBreakers:               breakers(p.Connections, e),
		UpstreamConnectionOptions:     keepalive(p.Connections),
		TypedExtensionProtocolOptions: map[string]*anyMsg{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(protocolOptions(p)),
		},
		Metadata: &corev3.Metadata{FilterMetadata: map[string]*structMsg{
			providerMetadataNamespace: mustStruct(map[string]any{"provider": p.Name, "kind": string(p.Kind)}),
		}},
	}
	if p.TLS {
		c.TransportSocket = upstreamTLS(p, o)
	}
	return c
}

// breakers are a provider cluster's bounds. Long streams hold a request
// slot for minutes, so the request bound is well above Envoy's default of
// 1024; past it, and past the pending queue, Envoy answers 503 (flag UO)
// at once rather than queue. Retries are bounded by a share of the
// requests in flight. The bounds are the provider's own, gateway.edge's by
// default.
func breakers(c policy.Connections, e policy.Edge) *clusterv3.CircuitBreakers {
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
		MaxConnections:     u32(c.MaxConnections),
		MaxPendingRequests: u32(c.MaxPendingRequests),
		MaxRequests:        u32(c.MaxRequests),
		RetryBudget: &clusterv3.CircuitBreakers_Thresholds_RetryBudget{
			BudgetPercent:       &typev3.Percent{Value: e.RetryBudgetPercent},
			MinRetryConcurrency: u32(e.RetryMinConcurrency),
		},
	}}}
}

// Listener is the ingress listener.
func Listener(p *policy.Policy, o Options) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:    contract.ListenerName,
		Address: socketAddress(p.Gateway.ListenHost, p.Gateway.ListenPort),
		// Buffered request bodies must fit; leave room above the limit so
		// the limit, not the buffer, decides (and answers 413).
		PerConnectionBufferLimitBytes: u32(uint32(p.Gateway.MaxRequestBytes + 1<<20)),
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(connectionManager(p, o))},
		}}}},
	}
}

// RouteConfig is the route table: two routes per policy route (found by
// the header ext_proc sets once it has translated the request, or by the
// client's path), each sending attempt n to the n-th provider the router
// chose, and a catch-all 404.
func RouteConfig(p *policy.Policy) *routev3.RouteConfiguration {
	// Routes found by the header come first: the path of a translated
	// request is its provider's and could match any route.
	routes := make([]*routev3.Route, 0, 2*len(p.Routes)+1)
	for _, r := range p.Routes {
		routes = append(routes, translatedRoute(p, r))
	}
	for _, r := range p.Routes {
		routes = append(routes, route(p, r))
	}
	routes = append(routes, notFoundRoute())
	return &routev3.RouteConfiguration{
		Name: contract.RouteConfigName,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    "switchyard",
			Domains: []string{"*"},
			Routes:  routes,
		}},
	}
}
