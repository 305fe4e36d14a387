package policy

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// TracingSpec turns on OpenTelemetry traces (gateway.tracing): Envoy's span
// of each request and ext_proc's spans under it (the routing decision,
// quota admission, cache lookup, each attempt at a provider), exported
// over OTLP to a collector. Without the section nothing is traced.
type TracingSpec struct {
	// Collector is the OTLP receiver, host:port (4317 is OTLP/gRPC's
	// port, 4318 OTLP/HTTP's).
	Collector string `yaml:"collector"`
	// Protocol is grpc (the default) or http (OTLP/HTTP with protobuf, to
	// /v1/traces).
	Protocol string `yaml:"protocol"`
	// TLS reaches the collector over TLS, checked against the system's CAs.
	TLS bool `yaml:"tls"`
	// SampleRatio is the share of requests traced, 0 to 1 (default 1). A
	// request whose client sent a sampled traceparent is traced whatever
	// the ratio; one that failed, fell back or ran slow is kept by
	// ext_proc whatever the ratio.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// KeepSlowerThan keeps the trace of any request that took longer
	// (default 30s).
	KeepSlowerThan *Duration `yaml:"keep_slower_than"`
	// Content records prompts and completions, masked by redact, on the
	// attempt spans of the routes and tenants it names; off for every
	// other request.
	Content *TraceContentSpec `yaml:"content"`
	// Viewer is where a trace is seen, a URL with {trace_id} in it (Jaeger:
	// http://host:16686/trace/{trace_id}); the console links each request
	// to its trace there.
	Viewer string `yaml:"viewer"`
}

// TraceContentSpec says whose prompts and completions traces carry.
type TraceContentSpec struct {
	// Routes and Tenants name where content is recorded: a request of a
	// route listed, or of a tenant listed.
	Routes  []string `yaml:"routes"`
	Tenants []string `yaml:"tenants"`
	// MaxBytes bounds the prompt and the completion each (default 4KiB):
	// past it the text is cut.
	MaxBytes ByteSize `yaml:"max_bytes"`
}

// Tracing is the compiled tracing section.
type Tracing struct {
	// Collector is host:port; Host and Port are its parts.
	Collector string
	Host      string
	Port      int
	// Protocol is TraceGRPC or TraceHTTP.
	Protocol string
	TLS      bool
	// SampleRatio is in [0, 1].
	SampleRatio    float64
	KeepSlowerThan time.Duration
	// ContentRoutes and ContentTenants are the route and tenant names
	// whose requests' content is recorded; ContentMaxBytes bounds it.
	ContentRoutes   map[string]bool
	ContentTenants  map[string]bool
	ContentMaxBytes int
	// Viewer is the URL template of a trace ({trace_id}); empty: none.
	Viewer string
}

// TraceIDPlaceholder is what a viewer URL template holds for the trace.
const TraceIDPlaceholder = "{trace_id}"

// ViewerURL is where the trace id is seen, "" without a viewer or an id.
func (t *Tracing) ViewerURL(id string) string {
	if t == nil || t.Viewer == "" || id == "" {
		return ""
	}
	return strings.ReplaceAll(t.Viewer, TraceIDPlaceholder, url.PathEscape(id))
}

// The OTLP transports.
const (
	TraceGRPC = "grpc"
	TraceHTTP = "http"
)

// Tracing defaults.
const (
	DefaultKeepSlowerThan  = 30 * time.Second
	DefaultTraceContentMax = 4 << 10
)

// Captures reports whether a request of route and tenant ("" before
// authentication) has its prompts and completions recorded.
func (t *Tracing) Captures(route, tenant string) bool {
	return t != nil && (t.ContentRoutes[route] || (tenant != "" && t.ContentTenants[tenant]))
}

// tracing compiles gateway.tracing; the names content lists are checked
// once routes and tenants are known (tracingScopes).
func (c *compiler) tracing(src source, s *TracingSpec) *Tracing {
	if s == nil {
		return nil
	}
	t := &Tracing{Collector: s.Collector, Protocol: TraceGRPC, TLS: s.TLS, SampleRatio: 1, KeepSlowerThan: DefaultKeepSlowerThan, ContentMaxBytes: DefaultTraceContentMax}
	host, port, err := net.SplitHostPort(s.Collector)
	pn, perr := strconv.Atoi(port)
	switch {
	case s.Collector == "":
		c.at(src, "gateway", "tracing.collector", "is required: the OTLP receiver's host:port")
	case err != nil || perr != nil || host == "" || pn <= 0 || pn > 65535:
		c.at(src, "gateway", "tracing.collector", "must be host:port, got %q", s.Collector)
	}
	t.Host, t.Port = host, pn
	switch s.Protocol {
	case "", TraceGRPC:
	case TraceHTTP:
		t.Protocol = TraceHTTP
	default:
		c.at(src, "gateway", "tracing.protocol", "must be grpc or http, got %q", s.Protocol)
	}
	if r := s.SampleRatio; r != nil {
		if *r < 0 || *r > 1 {
			c.at(src, "gateway", "tracing.sample_ratio", "must be between 0 and 1, got %v", *r)
		}
		t.SampleRatio = *r
	}
	if d := s.KeepSlowerThan; d != nil {
		if *d == 0 {
			c.at(src, "gateway", "tracing.keep_slower_than", "must be above 0 (every request would be kept)")
		}
		t.KeepSlowerThan = time.Duration(*d)
	}
	if s.Viewer != "" {
		u, err := url.Parse(strings.ReplaceAll(s.Viewer, TraceIDPlaceholder, "0"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.Contains(s.Viewer, TraceIDPlaceholder) {
			c.at(src, "gateway", "tracing.viewer", "must be an http or https URL holding %s, got %q", TraceIDPlaceholder, s.Viewer)
		}
		t.Viewer = s.Viewer
	}
	if ct := s.Content; ct != nil {
		if ct.MaxBytes != 0 {
			t.ContentMaxBytes = int(ct.MaxBytes)
		}
		if t.ContentMaxBytes < 256 || t.ContentMaxBytes > 64<<10 {
			c.at(src, "gateway", "tracing.content.max_bytes", "must be between 256B and 64KiB")
		}
		if !s.TLS && host != "" && !loopback(host) && len(ct.Routes)+len(ct.Tenants) > 0 {
			c.at(src, "gateway", "tracing.content", "would send prompts in clear to %s; set tracing.tls", host)
		}
	}
	return t
}

// tracingScopes checks that the routes and tenants whose content traces
// record exist.
func (c *compiler) tracingScopes(s *TracingSpec, t *Tracing, p *Policy) {
	if s == nil || s.Content == nil || t == nil {
		return
	}
	src := source{file: c.gwFile, path: "gateway"}
	routes := map[string]bool{}
	for _, r := range p.Routes {
		routes[r.Name] = true
	}
	tenants := map[string]bool{}
	for _, tn := range p.Tenants {
		tenants[tn.Name] = true
	}
	t.ContentRoutes, t.ContentTenants = names(c, src, "tracing.content.routes", "route", s.Content.Routes, routes),
		names(c, src, "tracing.content.tenants", "tenant", s.Content.Tenants, tenants)
}

// names is the set of names listed in field, each of which must be known.
func names(c *compiler, src source, field, kind string, list []string, known map[string]bool) map[string]bool {
	out := make(map[string]bool, len(list))
	for i, n := range list {
		if !known[n] {
			c.at(src, "gateway", field, "[%d] names no %s (got %q)", i, kind, n)
		}
		out[n] = true
	}
	return out
}
