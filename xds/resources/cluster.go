package resources

import (
	"slices"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	compositev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/composite/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
)

// protocolOptions are the provider's idle timeout and HTTP version.
func protocolOptions(p *policy.Provider) *httpv3.HttpProtocolOptions {
	c := p.Connections
	o := &httpv3.HttpProtocolOptions{
		CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: dur(c.IdleTimeout)},
	}
	switch {
	case c.Protocol == policy.ProtocolHTTP2:
		// Over plain http:// this is prior knowledge (h2c): the server must
		// speak HTTP/2 from the first byte, as the policy says it does.
		o.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
		}}
	case p.TLS && c.Protocol == policy.ProtocolAuto:
		// HTTP/2 where the provider offers it through ALPN, else HTTP/1.1.
		o.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_AutoConfig{AutoConfig: &httpv3.HttpProtocolOptions_AutoHttpConfig{}}
	default:
		o.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}},
		}}
	}
	return o
}

// keepalive is the provider's TCP keepalive, nil when the system's
// applies: probes after Keepalive of silence, then every tenth of it, and
// the connection is dropped after three unanswered.
func keepalive(c policy.Connections) *clusterv3.UpstreamConnectionOptions {
	if c.Keepalive == 0 {
		return nil
	}
	secs := uint32(c.Keepalive / time.Second)
	return &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &corev3.TcpKeepalive{
		KeepaliveTime:     u32(secs),
		KeepaliveInterval: u32(max(secs/10, 1)),
		KeepaliveProbes:   u32(3),
	}}
}

func upstreamTLS(p *policy.Provider, o Options) *corev3.TransportSocket {
	ca := o.CACertFile
	if ca == "" {
		ca = DefaultCACertFile
	}
	ctx := &tlsv3.UpstreamTlsContext{
		Sni: p.Host,
		CommonTlsContext: &tlsv3.CommonTlsContext{
			AlpnProtocols: []string{"h2", "http/1.1"},
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
				TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: ca}},
				MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
					SanType: tlsv3.SubjectAltNameMatcher_DNS,
					// Envoy matches a wildcard certificate SAN against an
					// exact DNS matcher, so the host itself is enough.
					Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: p.Host}},
				}},
			}},
		},
	}
	return &corev3.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(ctx)},
	}
}

// hedges reports whether a route of p hedges.
func hedges(p *policy.Policy) bool {
	return slices.ContainsFunc(p.Routes, func(r *policy.Route) bool { return r.Hedge != nil })
}

// hedgeClusters are, when a route of p hedges, one composite cluster per
// ordered pair of two providers (a hedge races two providers: the router
// hedges no plan whose first two targets share one). A hedged request is
// routed to the pair of its plan's first two targets: the composite sends
// attempt 1 to the first provider's cluster and attempt 2, whether a hedge
// or a failover, to the second's, each with its own TLS and pool. Envoy
// 1.40 does not choose the route's cluster again for a hedge, so the pair
// must be one cluster. None without a hedged route.
func hedgeClusters(p *policy.Policy) []*clusterv3.Cluster {
	if !hedges(p) {
		return nil
	}
	var out []*clusterv3.Cluster
	for _, a := range p.Providers {
		for _, b := range p.Providers {
			if a == b {
				continue
			}
			out = append(out, &clusterv3.Cluster{
				Name:           contract.HedgeCluster(a.Name, b.Name),
				ConnectTimeout: dur(a.ConnectTimeout),
				LbPolicy:       clusterv3.Cluster_CLUSTER_PROVIDED,
				ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
					Name: "envoy.clusters.composite",
					TypedConfig: mustAny(&compositev3.ClusterConfig{Clusters: []*compositev3.ClusterConfig_ClusterEntry{
						{Name: a.Cluster}, {Name: b.Cluster},
					}}),
				}},
				// The router counts a hedge against the composite's retry
				// bound, whose default (3 at once) would stop hedging under
				// any load: its bounds are the first provider's.
				CircuitBreakers: breakers(a.Connections, p.Gateway.Edge),
			})
		}
	}
	return out
}
