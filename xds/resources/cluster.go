package resources

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/switchyard/switchyard/configs/policy"
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
