package policy

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// gateway compiles the gateway section: the listener, the admin key, the
// body limit, health, the cost governor, the ledger, events, tracing,
// the token bucket and the edge.
func (c *compiler) gateway(g *GatewaySpec, out *Gateway) {
	src := source{file: c.gwFile, path: "gateway"}
	if g == nil {
		g = &GatewaySpec{}
	}
	c.listener(src, g, out)
	if g.AdminKeySHA256 != "" {
		h, ok := parseSHA256(g.AdminKeySHA256)
		if !ok {
			c.at(src, "gateway", "admin_key_sha256", "must be 64 hex digits (the SHA-256 of the admin key)")
		}
		out.AdminKeyHash, out.HasAdminKey = h, ok
	}
	out.MaxRequestBytes = int64(g.MaxRequestBytes)
	if out.MaxRequestBytes == 0 {
		out.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if out.MaxRequestBytes < 1<<10 || out.MaxRequestBytes > 64<<20 {
		c.at(src, "gateway", "max_request_bytes", "must be between 1KiB and 64MiB")
	}
	out.Health = c.health(src)
	out.Governor = c.governor(src, g.Governor)
	out.Ledger = c.ledger(src, g.Ledger)
	out.Events = c.events(src, g.Events)
	if g.Audit != nil {
		out.CapturePrompts = g.Audit.CapturePrompts
	}
	out.RetiredModels = c.retiredModels(src, g.RetiredModels)
	out.Tracing = c.tracing(src, g.Tracing)
	if l := g.LocalRateLimit; l != nil {
		out.LocalRateLimit = c.localRateLimit(src, l)
	}
	out.Edge = DefaultEdge()
	if n := c.idx.lookup(c.gwFile, "gateway.edge"); n != nil {
		if err := n.Decode(&out.Edge); err != nil {
			c.at(src, "gateway", "edge", "%v", err)
		} else if err := out.Edge.Validate(); err != nil {
			c.at(src, "gateway", "edge", "%v", err)
		}
	}
}

// webhook compiles the events webhook: an https URL (http only to
// loopback, for a local receiver) and a secret to sign with.
func (c *compiler) webhook(src source, w *WebhookSpec) *Webhook {
	out := &Webhook{URL: w.URL, Timeout: 5 * time.Second}
	u, err := url.Parse(w.URL)
	switch {
	case w.URL == "":
		c.at(src, "gateway", "events.webhook.url", "is required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil:
		c.at(src, "gateway", "events.webhook.url", "must be an http(s) URL without credentials")
	case u.Scheme == "http" && !loopback(u.Hostname()):
		c.at(src, "gateway", "events.webhook.url", "http:// to %s would send usage data in clear; use https", u.Hostname())
	}
	if w.Secret == nil || (w.Secret.Env == "") == (w.Secret.File == "") {
		c.at(src, "gateway", "events.webhook.secret", "is required, to sign each call: {env: NAME} or {file: path}")
	} else {
		out.Secret = *w.Secret
	}
	switch t := time.Duration(w.Timeout); {
	case t < 0 || t > time.Minute:
		c.at(src, "gateway", "events.webhook.timeout", "must be between 0 (the default, 5s) and 1m; got %s", t)
	case t > 0:
		out.Timeout = t
	}
	return out
}

// listener compiles where Envoy listens.
func (c *compiler) listener(src source, g *GatewaySpec, out *Gateway) {
	listen := g.Listen
	if listen == "" {
		listen = DefaultListen
	}
	host, port, err := net.SplitHostPort(listen)
	pn, perr := strconv.Atoi(port)
	if err != nil || perr != nil || pn <= 0 || pn > 65535 || net.ParseIP(host) == nil {
		c.at(src, "gateway", "listen", "must be ip:port, got %q", listen)
	}
	out.ListenHost, out.ListenPort = host, pn
}

// health compiles gateway.health over the preset its profile names.
func (c *compiler) health(src source) HealthConfig {
	out := DefaultHealthConfig()
	if n := c.idx.lookup(c.gwFile, "gateway.health"); n != nil {
		// Decoded over the profile's preset, so an operator sets only what
		// differs.
		var named struct {
			Profile string `yaml:"profile"`
		}
		_ = n.Decode(&named) // a malformed mapping is reported by the full decode below
		if preset, ok := HealthProfile(named.Profile); ok {
			out = preset
		} else {
			c.at(src, "gateway", "health.profile", "must be one of %s; got %q", strings.Join(sortedKeys(HealthProfiles), ", "), named.Profile)
		}
		if err := n.Decode(&out); err != nil {
			c.at(src, "gateway", "health", "%v", err)
		} else if err := out.Validate(); err != nil {
			c.at(src, "gateway", "health", "%v", err)
		}
	}
	return out
}

// governor compiles the cost governor's thresholds.
func (c *compiler) governor(src source, gv *GovernorSpec) Governor {
	out := Governor{HighAt: 0.8, CheapOnlyAt: 0.95, FloorMicros: 1_000_000}
	if gv != nil {
		if gv.HighAt != nil {
			out.HighAt = *gv.HighAt
		}
		if gv.CheapOnlyAt != nil {
			out.CheapOnlyAt = *gv.CheapOnlyAt
		}
		if out.HighAt <= 0 || out.CheapOnlyAt <= out.HighAt || out.CheapOnlyAt > 1 {
			c.at(src, "gateway", "governor", "needs 0 < high_at < cheap_only_at <= 1")
		}
		if gv.FloorUSD != nil {
			out.FloorMicros, _ = c.usd(src, "gateway", "governor.floor_usd", *gv.FloorUSD, true)
		}
	}
	return out
}

// ledger compiles where usage records go.
func (c *compiler) ledger(src source, l *LedgerSpec) Ledger {
	out := Ledger{Driver: "sqlite", Path: "usage.db", BatchSize: 500, FlushInterval: 200 * time.Millisecond, Buffer: 100_000}
	if l != nil {
		switch l.Driver {
		case "", "sqlite":
			if l.DSN != nil {
				c.at(src, "gateway", "ledger.dsn", "is for postgres; sqlite takes a path")
			}
		case "postgres":
			out.Driver = "postgres"
			if l.DSN == nil || (l.DSN.Env == "") == (l.DSN.File == "") {
				c.at(src, "gateway", "ledger.dsn", "postgres needs a dsn: {env: NAME} or {file: path}")
			}
			out.DSN = l.DSN
		default:
			c.at(src, "gateway", "ledger.driver", "must be sqlite or postgres; got %q", l.Driver)
		}
		if l.Path != "" {
			out.Path = l.Path
		}
		if l.BatchSize < 0 || l.Buffer < 0 {
			c.at(src, "gateway", "ledger", "batch_size and buffer must be >= 0")
		}
		if l.BatchSize > 0 {
			out.BatchSize = l.BatchSize
		}
		if l.Buffer > 0 {
			out.Buffer = l.Buffer
		}
		if l.FlushInterval > 0 {
			out.FlushInterval = time.Duration(l.FlushInterval)
		}
	}
	return out
}

// events compiles the usage events; nil: off.
func (c *compiler) events(src source, e *EventsSpec) *Events {
	if e == nil {
		return nil
	}
	out := &Events{Stream: "usage", MaxLen: 100_000}
	if e.Stream != "" {
		if !eventStream.MatchString(e.Stream) {
			c.at(src, "gateway", "events.stream", "must be 1-64 letters, digits, '_', '-' or '.'; got %q", e.Stream)
		}
		out.Stream = e.Stream
	}
	switch {
	case e.MaxLen < 0:
		c.at(src, "gateway", "events.max_len", "must be >= 0; got %d", e.MaxLen)
	case e.MaxLen > 0 && e.MaxLen < 1000:
		c.at(src, "gateway", "events.max_len", "must be at least 1000, so a consumer that blinks loses nothing; got %d", e.MaxLen)
	case e.MaxLen > 0:
		out.MaxLen = e.MaxLen
	}
	if w := e.Webhook; w != nil {
		out.Webhook = c.webhook(src, w)
	}
	return out
}

// localRateLimit compiles Envoy's token bucket: the listener's, and each
// client's share of it.
func (c *compiler) localRateLimit(src source, l *LocalRateLimitSpec) LocalRateLimit {
	if l.RequestsPerSecond <= 0 {
		c.at(src, "gateway", "local_rate_limit.requests_per_second", "must be > 0")
	}
	if l.Burst < l.RequestsPerSecond {
		c.at(src, "gateway", "local_rate_limit.burst", "must be >= requests_per_second")
	}
	out := LocalRateLimit{RequestsPerSecond: l.RequestsPerSecond, Burst: l.Burst}
	// Each client gets half the listener's bucket unless told otherwise:
	// one flooding client leaves the other half to everyone else.
	pc := ClientRateLimit{RequestsPerSecond: max(1, l.RequestsPerSecond/2), Burst: max(1, l.Burst/2), MaxClients: 1000}
	if s := l.PerClient; s != nil {
		if s.RequestsPerSecond != 0 {
			pc.RequestsPerSecond = s.RequestsPerSecond
		}
		if s.Burst != 0 {
			pc.Burst = s.Burst
		}
		if s.MaxClients != 0 {
			pc.MaxClients = s.MaxClients
		}
	}
	switch {
	case pc.RequestsPerSecond < 1 || pc.RequestsPerSecond > l.RequestsPerSecond:
		c.at(src, "gateway", "local_rate_limit.per_client.requests_per_second", "must be between 1 and the listener's requests_per_second (%d)", l.RequestsPerSecond)
	case pc.Burst < pc.RequestsPerSecond || pc.Burst > l.Burst:
		c.at(src, "gateway", "local_rate_limit.per_client.burst", "must be between its requests_per_second and the listener's burst (%d)", l.Burst)
	case pc.MaxClients < 1 || pc.MaxClients > 100_000:
		c.at(src, "gateway", "local_rate_limit.per_client.max_clients", "must be between 1 and 100000")
	}
	out.PerClient = pc
	return out
}
