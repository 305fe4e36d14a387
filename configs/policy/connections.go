package policy

import (
	"time"
)

// ConnectionsSpec tunes one provider's Envoy cluster: how many connections
// and requests it may hold, how long an idle connection is kept, TCP
// keepalive, and the HTTP version. Unset keys keep gateway.edge's bounds
// and the defaults below. The seed's OpenAI line (`max_connections: 10,
// keepalive: 300s, timeout: 30s`) is `{max_connections: 10,
// idle_timeout: 300s}` with connect_timeout: 30s on the provider.
type ConnectionsSpec struct {
	// MaxConnections bounds the connections Envoy opens to the provider
	// (default gateway.edge.upstream_max_connections). Over HTTP/1.1 that
	// is also how many requests run at once; over HTTP/2 each connection
	// carries many.
	MaxConnections uint32 `yaml:"max_connections"`
	// MaxRequests bounds the requests in flight to the provider, and
	// MaxPendingRequests those waiting for a connection; past them Envoy
	// answers 503 at once, which the router fails over.
	MaxRequests        uint32 `yaml:"max_requests"`
	MaxPendingRequests uint32 `yaml:"max_pending_requests"`
	// IdleTimeout closes a pooled connection nobody used for this long
	// (default 60s): long enough to be reused, shorter than the provider's
	// load balancer keeps it.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// Keepalive sends TCP keepalive probes after a connection was silent
	// this long, so a connection a middlebox dropped is found before a
	// request is sent on it; unset leaves the system's setting.
	Keepalive Duration `yaml:"keepalive"`
	// Protocol is auto (the default: HTTP/2 where a TLS provider offers it
	// through ALPN, else HTTP/1.1), http1 or http2 (HTTP/2 always; over
	// plain http:// by prior knowledge, h2c, as vLLM and other self-hosted
	// servers behind an HTTP/2 front serve it).
	Protocol string `yaml:"protocol"`
}

// Protocol is the HTTP version Envoy speaks to a provider.
type Protocol string

// The protocols.
const (
	ProtocolAuto  Protocol = "auto"
	ProtocolHTTP1 Protocol = "http1"
	ProtocolHTTP2 Protocol = "http2"
)

var protocols = map[string]Protocol{"auto": ProtocolAuto, "http1": ProtocolHTTP1, "http2": ProtocolHTTP2}

// Connections is a provider's compiled connection settings, every field
// set.
type Connections struct {
	MaxConnections     uint32
	MaxRequests        uint32
	MaxPendingRequests uint32
	IdleTimeout        time.Duration
	// Keepalive is zero when the system's TCP keepalive applies.
	Keepalive time.Duration
	Protocol  Protocol
}

// DefaultUpstreamIdleTimeout closes pooled provider connections nobody
// used for a minute, before a provider's load balancer does it
// mid-request.
const DefaultUpstreamIdleTimeout = 60 * time.Second

// Bounds of the connection settings: a connect timeout or an idle
// timeout past these is a typo, and a keepalive under a second floods
// the provider with probes.
const (
	maxConnectTimeout = time.Minute
	maxIdleTimeout    = time.Hour
	minKeepalive      = time.Second
	maxKeepalive      = 2 * time.Hour
)

// connections compiles a provider's connection settings over the edge's
// bounds, and checks its connect timeout.
func (c *compiler) connections(src source, d string, s *ConnectionsSpec, connectTimeout time.Duration) (Connections, bool) {
	e := c.edge
	out := Connections{
		MaxConnections: e.UpstreamMaxConnections, MaxRequests: e.UpstreamMaxRequests, MaxPendingRequests: e.UpstreamMaxPendingRequests,
		IdleTimeout: DefaultUpstreamIdleTimeout, Protocol: ProtocolAuto,
	}
	ok := true
	if connectTimeout > maxConnectTimeout {
		c.at(src, d, "connect_timeout", "must be at most %s, got %s", maxConnectTimeout, connectTimeout)
		ok = false
	}
	if s == nil {
		return out, ok
	}
	for _, n := range []struct {
		field string
		v     uint32
		into  *uint32
	}{
		{"connections.max_connections", s.MaxConnections, &out.MaxConnections},
		{"connections.max_requests", s.MaxRequests, &out.MaxRequests},
		{"connections.max_pending_requests", s.MaxPendingRequests, &out.MaxPendingRequests},
	} {
		if n.v > 0 {
			*n.into = n.v
		}
	}
	if s.IdleTimeout != 0 {
		out.IdleTimeout = time.Duration(s.IdleTimeout)
	}
	if out.IdleTimeout > maxIdleTimeout {
		c.at(src, d, "connections.idle_timeout", "must be at most %s, got %s", maxIdleTimeout, out.IdleTimeout)
		ok = false
	}
	out.Keepalive = time.Duration(s.Keepalive)
	if out.Keepalive != 0 && (out.Keepalive < minKeepalive || out.Keepalive > maxKeepalive || out.Keepalive%time.Second != 0) {
		// TCP counts keepalive in whole seconds.
		c.at(src, d, "connections.keepalive", "must be whole seconds between %s and %s, got %s", minKeepalive, maxKeepalive, out.Keepalive)
		ok = false
	}
	if s.Protocol != "" {
		p, known := protocols[s.Protocol]
		if !known {
			c.at(src, d, "connections.protocol", "must be one of auto, http1, http2; got %q", s.Protocol)
			ok = false
		}
		out.Protocol = p
	}
	return out, ok
}
