package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/filters/cache/cachespec"
)

// Defaults applied where the policy is silent.
const (
	DefaultListen            = "127.0.0.1:8080"
	DefaultMaxRequestBytes   = 10 << 20
	DefaultAttempts          = 3
	DefaultPerTryIdleTimeout = 60 * time.Second
	DefaultAnswerTimeout     = 10 * time.Minute
	DefaultConnectTimeout    = 5 * time.Second
	maxPriceUSDPerMTok       = 10000
)

// dialects are the OpenAI-compatible servers whose quirks the translator
// knows; a test in filters/translate keeps the two lists equal.
var dialects = map[string]bool{"vllm": true, "ollama": true, "mistral": true, "deepseek": true, "groq": true}

// Dialects lists the dialect names a policy accepts, sorted.
func Dialects() []string {
	out := make([]string, 0, len(dialects))
	for d := range dialects {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`)

// compiler collects problems while compiling a merged spec.
type compiler struct {
	idx    nodeIndex
	gwFile string
	probs  Problems
	// capture is the gateway's audit capture setting, the tenants' default.
	capture bool
	// edge is the gateway's edge, whose upstream bounds are every
	// provider's default.
	edge Edge
}

// eventStream is what an events stream may be called.
var eventStream = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// at records a problem for field (relative to the element at src) of the
// element shown as display.
func (c *compiler) at(src source, display, field, format string, args ...any) {
	p := c.locate(src, display, field)
	p.Reason = fmt.Sprintf(format, args...)
	c.probs = append(c.probs, p)
}

// locate is where field of the element at src is, as a Problem without
// its reason.
func (c *compiler) locate(src source, display, field string) Problem {
	p := Problem{File: src.file, Field: display}
	if field != "" {
		p.Field += "." + field
	}
	n := c.idx.lookup(src.file, joinPath(src.path, field))
	if n == nil {
		n = c.idx.lookup(src.file, src.path)
	}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	return p
}

func display(section string, i int, name string) string {
	if name != "" {
		return section + "[" + name + "]"
	}
	return section + "[" + strconv.Itoa(i) + "]"
}

func compile(s *Spec, idx nodeIndex, gwFile string, files []File) (*Policy, error) {
	c := &compiler{idx: idx, gwFile: gwFile}
	p := &Policy{
		Version:   version(files),
		providers: map[string]*Provider{},
		models:    map[string]*Model{},
		keys:      map[[32]byte]*Key{},
	}
	c.gateway(s.Gateway, &p.Gateway)
	c.capture, c.edge = p.Gateway.CapturePrompts, p.Gateway.Edge
	for i := range s.Providers {
		if pr := c.provider(&s.Providers[i], i, p.providers); pr != nil {
			p.Providers = append(p.Providers, pr)
			p.providers[pr.Name] = pr
		}
	}
	p.Catalog = c.catalog(s.Catalog)
	// The first entry of a name is the model; later entries of the name
	// are more deployments of it. Entries with match are patterns.
	firsts := map[string]*ModelSpec{}
	origins := map[string]*ModelSpec{} // the first entry as written, for its fallback list
	for i := range s.Models {
		ms := &s.Models[i]
		if ms.Match != "" {
			continue
		}
		if fs := firsts[ms.Name]; fs != nil {
			if first := p.models[ms.Name]; first != nil {
				if d := c.deployment(ms, fs, first, p); d != nil {
					first.Deployments = append(first.Deployments, d)
				}
			}
			continue
		}
		m, filled := c.model(ms, i, p)
		if ms.Name != "" {
			firsts[ms.Name], origins[ms.Name] = filled, ms
		}
		if m != nil {
			m.Deployments = []*Model{m}
			p.Models = append(p.Models, m)
			p.models[m.Name] = m
		}
	}
	c.patterns(s.Models, p)
	c.aliases(s.Aliases, p)
	for i := range s.Models {
		if m := p.models[s.Models[i].Name]; m != nil && origins[m.Name] == &s.Models[i] && len(s.Models[i].Fallback) > 0 {
			m.Fallback = c.models(s.Models[i].src, display("models", i, m.Name), "fallback", s.Models[i].Fallback, p)
		}
	}
	for _, m := range p.Models {
		for _, d := range m.Deployments[1:] {
			d.Fallback, d.Deployments = m.Fallback, m.Deployments
		}
	}
	paths := map[string]bool{}
	names := map[string]bool{}
	for i := range s.Routes {
		if r := c.route(&s.Routes[i], i, paths, names, p); r != nil {
			p.Routes = append(p.Routes, r)
		}
	}
	tenants := map[string]bool{}
	for i := range s.Tenants {
		if t := c.tenant(&s.Tenants[i], i, p, tenants); t != nil {
			p.Tenants = append(p.Tenants, t)
		}
	}
	c.cacheScopes(s.Routes, tenants)
	c.judgeScopes(s.Routes, p)
	if s.Gateway != nil {
		c.tracingScopes(s.Gateway.Tracing, p.Gateway.Tracing, p)
	}
	if len(c.probs) > 0 {
		return nil, c.probs
	}
	return p, nil
}

func version(files []File) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func (c *compiler) gateway(g *GatewaySpec, out *Gateway) {
	src := source{file: c.gwFile, path: "gateway"}
	if g == nil {
		g = &GatewaySpec{}
	}
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
	out.Health = DefaultHealthConfig()
	if n := c.idx.lookup(c.gwFile, "gateway.health"); n != nil {
		// Decoded over the profile's preset, so an operator sets only what
		// differs.
		var named struct {
			Profile string `yaml:"profile"`
		}
		_ = n.Decode(&named) // a malformed mapping is reported by the full decode below
		if preset, ok := HealthProfile(named.Profile); ok {
			out.Health = preset
		} else {
			c.at(src, "gateway", "health.profile", "must be one of %s; got %q", strings.Join(sortedKeys(HealthProfiles), ", "), named.Profile)
		}
		if err := n.Decode(&out.Health); err != nil {
			c.at(src, "gateway", "health", "%v", err)
		} else if err := out.Health.Validate(); err != nil {
			c.at(src, "gateway", "health", "%v", err)
		}
	}
	out.Governor = Governor{HighAt: 0.8, CheapOnlyAt: 0.95, FloorMicros: 1_000_000}
	if gv := g.Governor; gv != nil {
		if gv.HighAt != nil {
			out.Governor.HighAt = *gv.HighAt
		}
		if gv.CheapOnlyAt != nil {
			out.Governor.CheapOnlyAt = *gv.CheapOnlyAt
		}
		if out.Governor.HighAt <= 0 || out.Governor.CheapOnlyAt <= out.Governor.HighAt || out.Governor.CheapOnlyAt > 1 {
			c.at(src, "gateway", "governor", "needs 0 < high_at < cheap_only_at <= 1")
		}
		if gv.FloorUSD != nil {
			out.Governor.FloorMicros, _ = c.usd(src, "gateway", "governor.floor_usd", *gv.FloorUSD, true)
		}
	}
	out.Ledger = Ledger{Driver: "sqlite", Path: "usage.db", BatchSize: 500, FlushInterval: 200 * time.Millisecond, Buffer: 100_000}
	if l := g.Ledger; l != nil {
		switch l.Driver {
		case "", "sqlite":
			if l.DSN != nil {
				c.at(src, "gateway", "ledger.dsn", "is for postgres; sqlite takes a path")
			}
		case "postgres":
			out.Ledger.Driver = "postgres"
			if l.DSN == nil || (l.DSN.Env == "") == (l.DSN.File == "") {
				c.at(src, "gateway", "ledger.dsn", "postgres needs a dsn: {env: NAME} or {file: path}")
			}
			out.Ledger.DSN = l.DSN
		default:
			c.at(src, "gateway", "ledger.driver", "must be sqlite or postgres; got %q", l.Driver)
		}
		if l.Path != "" {
			out.Ledger.Path = l.Path
		}
		if l.BatchSize < 0 || l.Buffer < 0 {
			c.at(src, "gateway", "ledger", "batch_size and buffer must be >= 0")
		}
		if l.BatchSize > 0 {
			out.Ledger.BatchSize = l.BatchSize
		}
		if l.Buffer > 0 {
			out.Ledger.Buffer = l.Buffer
		}
		if l.FlushInterval > 0 {
			out.Ledger.FlushInterval = time.Duration(l.FlushInterval)
		}
	}
	if e := g.Events; e != nil {
		out.Events = &Events{Stream: "usage", MaxLen: 100_000}
		if e.Stream != "" {
			if !eventStream.MatchString(e.Stream) {
				c.at(src, "gateway", "events.stream", "must be 1-64 letters, digits, '_', '-' or '.'; got %q", e.Stream)
			}
			out.Events.Stream = e.Stream
		}
		switch {
		case e.MaxLen < 0:
			c.at(src, "gateway", "events.max_len", "must be >= 0; got %d", e.MaxLen)
		case e.MaxLen > 0 && e.MaxLen < 1000:
			c.at(src, "gateway", "events.max_len", "must be at least 1000, so a consumer that blinks loses nothing; got %d", e.MaxLen)
		case e.MaxLen > 0:
			out.Events.MaxLen = e.MaxLen
		}
		if w := e.Webhook; w != nil {
			out.Events.Webhook = c.webhook(src, w)
		}
	}
	if g.Audit != nil {
		out.CapturePrompts = g.Audit.CapturePrompts
	}
	out.RetiredModels = c.retiredModels(src, g.RetiredModels)
	out.Tracing = c.tracing(src, g.Tracing)
	if l := g.LocalRateLimit; l != nil {
		if l.RequestsPerSecond <= 0 {
			c.at(src, "gateway", "local_rate_limit.requests_per_second", "must be > 0")
		}
		if l.Burst < l.RequestsPerSecond {
			c.at(src, "gateway", "local_rate_limit.burst", "must be >= requests_per_second")
		}
		out.LocalRateLimit = LocalRateLimit{RequestsPerSecond: l.RequestsPerSecond, Burst: l.Burst}
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
		out.LocalRateLimit.PerClient = pc
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

// newName checks the name of a provider or model (kind): set, well formed
// and not taken by an earlier one. (Routes and tenants word the same rule
// differently, in uniqueName; the wording is part of what the invalid
// cases under testdata assert.)
func (c *compiler) newName(src source, d, kind, name string, taken bool) bool {
	switch {
	case name == "":
		c.at(src, d, "name", "is required")
	case !nameRE.MatchString(name):
		c.at(src, d, "name", "must be letters, digits, '.', '_' or '-' (at most 64)")
	case taken:
		c.at(src, d, "name", "duplicate %s name", kind)
	default:
		return true
	}
	return false
}

func (c *compiler) provider(s *ProviderSpec, i int, seen map[string]*Provider) *Provider {
	d := display("providers", i, s.Name)
	ok := c.newName(s.src, d, "provider", s.Name, seen[s.Name] != nil)
	if ok && s.Name == AllProviders {
		c.at(s.src, d, "name", "%q is reserved: fault drills use it for every provider", s.Name)
		ok = false
	}
	if ok && s.Name == CacheProvider {
		c.at(s.src, d, "name", "%q is reserved: the ledger names the response cache so", s.Name)
		ok = false
	}
	kind, known := kinds[s.Kind]
	if !known {
		c.at(s.src, d, "kind", "must be one of openai, azure_openai, openai_compatible, anthropic, gemini; got %q", s.Kind)
		ok = false
	}
	p := &Provider{Name: s.Name, Kind: kind, APIVersion: s.APIVersion, Cluster: "provider_" + s.Name, Simulated: s.Simulated}
	u, err := url.Parse(s.BaseURL)
	switch {
	case s.BaseURL == "":
		c.at(s.src, d, "base_url", "is required")
		ok = false
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.RawQuery != "" || u.User != nil:
		c.at(s.src, d, "base_url", "must be an http(s) URL without query or credentials, got %q", s.BaseURL)
		ok = false
	case u.Scheme == "http" && !loopback(u.Hostname()) && !s.Insecure:
		c.at(s.src, d, "base_url", "http:// to %s would send the provider key and prompts in clear; use https, or set insecure: true on the provider", u.Hostname())
		ok = false
	default:
		p.Scheme, p.Host, p.TLS = u.Scheme, u.Hostname(), u.Scheme == "https"
		p.BasePath = strings.TrimSuffix(u.Path, "/")
		p.Port = 80
		if p.TLS {
			p.Port = 443
		}
		if u.Port() != "" {
			p.Port, _ = strconv.Atoi(u.Port())
		}
	}
	if kind == KindAzureOpenAI && s.APIVersion == "" {
		c.at(s.src, d, "api_version", "is required for azure_openai")
		ok = false
	}
	if s.Dialect != "" && kind != KindOpenAICompatible {
		c.at(s.src, d, "dialect", "only applies to openai_compatible")
		ok = false
	} else if s.Dialect != "" && !dialects[s.Dialect] {
		c.at(s.src, d, "dialect", "must be one of deepseek, groq, mistral, ollama, vllm; got %q", s.Dialect)
		ok = false
	}
	p.Dialect = s.Dialect
	if l := s.Limits; l != nil {
		if l.RequestsPerMinute < 0 || l.TokensPerMinute < 0 {
			c.at(s.src, d, "limits", "requests_per_minute and tokens_per_minute must be >= 0")
			ok = false
		}
		p.RequestsPerMinute, p.TokensPerMinute = l.RequestsPerMinute, l.TokensPerMinute
	}
	if kind != KindAzureOpenAI && s.APIVersion != "" {
		c.at(s.src, d, "api_version", "only applies to azure_openai")
		ok = false
	}
	if s.APIKey != nil && len(s.APIKeys) > 0 {
		c.at(s.src, d, "api_keys", "set api_key or api_keys, not both")
		ok = false
	}
	refs := s.APIKeys
	field := "api_keys"
	if s.APIKey != nil {
		refs, field = []SecretRef{*s.APIKey}, "api_key"
	}
	for j, r := range refs {
		if (r.Env == "") == (r.File == "") {
			f := field
			if field == "api_keys" {
				f += "[" + strconv.Itoa(j) + "]"
			}
			c.at(s.src, d, f, "must set exactly one of env or file")
			ok = false
		}
	}
	p.Keys = refs
	p.ConnectTimeout = time.Duration(s.ConnectTimeout)
	if p.ConnectTimeout == 0 {
		p.ConnectTimeout = DefaultConnectTimeout
	}
	var connOK bool
	if p.Connections, connOK = c.connections(s.src, d, s.Connections, p.ConnectTimeout); !connOK {
		ok = false
	}
	if !ok {
		return nil
	}
	return p
}

func (c *compiler) model(spec *ModelSpec, i int, p *Policy) (*Model, *ModelSpec) {
	d := display("models", i, spec.Name)
	ok := c.newName(spec.src, d, "model", spec.Name, p.models[spec.Name] != nil)
	before := len(c.probs)
	filled, entry, catalogPrice := c.fromCatalog(spec, d, p)
	s := &filled
	if len(c.probs) > before {
		// What the entry lacks is the catalog model's to give: naming the
		// missing fields too would only repeat this one.
		return nil, s
	}
	m := &Model{Name: s.Name, Upstream: s.Upstream, ContextWindow: s.ContextWindow, MaxOutputTokens: s.MaxOutputTokens, DefaultMaxTokens: s.DefaultMaxTokens, PriceSource: PriceCatalog}
	if m.Upstream == "" {
		m.Upstream = s.Name
	}
	if entry != nil {
		lifecycleOf(m, entry)
		p.lifecycle = append(p.lifecycle, lifecycleUse{at: c.locate(s.src, d, ""), model: m})
	}
	m.Provider = p.providers[s.Provider]
	if m.Provider == nil {
		c.at(s.src, d, "provider", "names no provider (got %q)", s.Provider)
		ok = false
	}
	before = len(c.probs)
	m.Caps = c.capabilities(s.src, d, s.Capabilities)
	ok = ok && len(c.probs) == before
	if m.ContextWindow <= 0 {
		c.at(s.src, d, "context_window", "must be > 0")
		ok = false
	}
	if !m.Caps.Has(CapEmbeddings) || m.Caps.Has(CapChat) {
		if m.MaxOutputTokens <= 0 {
			c.at(s.src, d, "max_output_tokens", "must be > 0")
			ok = false
		}
		if m.DefaultMaxTokens == 0 {
			m.DefaultMaxTokens = min(m.MaxOutputTokens, 4096)
		}
		if m.DefaultMaxTokens < 0 || m.DefaultMaxTokens > m.MaxOutputTokens {
			c.at(s.src, d, "default_max_tokens", "must be between 1 and max_output_tokens")
			ok = false
		}
	}
	pok := true
	switch {
	case catalogPrice:
		m.Price = entry.Price
	case c.idx.lookup(s.src.file, joinPath(s.src.path, "price_usd_per_mtok")) == nil:
		// Zero would be a price nobody stated: every answer free.
		c.at(s.src, d, "price_usd_per_mtok", "is required: the catalog does not know %q (docs/MODELS.md); state its price (0 for a self-hosted model) or name a catalog model with catalog:", s.Name)
		pok = false
	default:
		m.Price, pok = c.prices(s.src, d, s.Price)
	}
	ok = c.deploymentFields(s, d, m) && pok && ok
	m.Balance = BalanceWeighted
	if s.Balance != "" {
		b, known := balances[s.Balance]
		if !known {
			c.at(s.src, d, "balance", "must be one of weighted, least_in_flight, health; got %q", s.Balance)
			ok = false
		}
		m.Balance = b
	}
	m.Quality, m.Cheap, m.SelfHosted = 0.5, s.Cheap, s.SelfHosted
	if s.Quality != nil {
		m.Quality = *s.Quality
		if m.Quality < 0 || m.Quality > 1 {
			c.at(s.src, d, "quality", "must be between 0 and 1")
			ok = false
		}
	}
	if !ok {
		return nil, s
	}
	return m, s
}

// prices compiles a deployment's prices.
func (c *compiler) prices(src source, d string, s PriceSpec) (Price, bool) {
	before := len(c.probs)
	r := c.rates(src, d, "price_usd_per_mtok", s.RatesSpec)
	out := Price{
		InputPerMTok: r.InputPerMTok, OutputPerMTok: r.OutputPerMTok, CachedInputPerMTok: r.CachedInputPerMTok,
		CacheWritePerMTok: r.CacheWritePerMTok, CacheWrite1hPerMTok: r.CacheWrite1hPerMTok,
	}
	if l := s.LongContext; l != nil {
		out.Long = c.rates(src, d, "price_usd_per_mtok.long_context", l.RatesSpec)
		out.LongAbove = l.AboveInputTokens
		if l.AboveInputTokens <= 0 {
			c.at(src, d, "price_usd_per_mtok.long_context.above_input_tokens", "must be > 0: the prompt size above which the long tier applies")
		}
	}
	return out, len(c.probs) == before
}

// rates compiles one price tier (field names its YAML path). What is not
// priced apart costs what input does: a cache read, a cache write; an
// hour's cache write costs what a write for the default lifetime does.
func (c *compiler) rates(src source, d, field string, s RatesSpec) Rates {
	var r Rates
	r.InputPerMTok, _ = c.price(src, d, field+".input", s.Input)
	r.OutputPerMTok, _ = c.price(src, d, field+".output", s.Output)
	optional := func(name string, usd *float64, unset int64) int64 {
		if usd == nil {
			return unset
		}
		v, _ := c.price(src, d, field+"."+name, *usd)
		return v
	}
	r.CachedInputPerMTok = optional("cached_input", s.CachedInput, r.InputPerMTok)
	r.CacheWritePerMTok = optional("cache_write", s.CacheWrite, r.InputPerMTok)
	r.CacheWrite1hPerMTok = optional("cache_write_1h", s.CacheWrite1h, r.CacheWritePerMTok)
	return r
}

// deploymentFields compiles what each deployment of a model sets for
// itself besides its provider, upstream name and price: its weight and
// its own limits.
func (c *compiler) deploymentFields(s *ModelSpec, d string, m *Model) bool {
	ok := true
	m.Weight = 1
	if s.Weight != nil {
		m.Weight = *s.Weight
		if m.Weight < 0 || m.Weight > maxWeight {
			c.at(s.src, d, "weight", "must be between 0 (a standby, tried after the others) and %d; got %d", maxWeight, m.Weight)
			ok = false
		}
	}
	m.RequestsPerMinute, m.TokensPerMinute = 0, 0
	if l := s.Limits; l != nil {
		if l.RequestsPerMinute < 0 || l.TokensPerMinute < 0 {
			c.at(s.src, d, "limits", "requests_per_minute and tokens_per_minute must be >= 0")
			ok = false
		}
		m.RequestsPerMinute, m.TokensPerMinute = l.RequestsPerMinute, l.TokensPerMinute
	}
	return ok
}

// sharedFields are what every deployment of a model has in common: what
// clients see of the model and how the router treats it. A later
// deployment may repeat one only with the first's value.
var sharedFields = []struct {
	key  string
	same func(a, b *ModelSpec) bool
}{
	{"context_window", func(a, b *ModelSpec) bool { return a.ContextWindow == b.ContextWindow }},
	{"max_output_tokens", func(a, b *ModelSpec) bool { return a.MaxOutputTokens == b.MaxOutputTokens }},
	{"default_max_tokens", func(a, b *ModelSpec) bool { return a.DefaultMaxTokens == b.DefaultMaxTokens }},
	{"capabilities", func(a, b *ModelSpec) bool {
		return slices.Equal(slices.Sorted(slices.Values(a.Capabilities)), slices.Sorted(slices.Values(b.Capabilities)))
	}},
	{"quality", func(a, b *ModelSpec) bool {
		return (a.Quality == nil) == (b.Quality == nil) && (a.Quality == nil || *a.Quality == *b.Quality)
	}},
	{"cheap", func(a, b *ModelSpec) bool { return a.Cheap == b.Cheap }},
	{"self_hosted", func(a, b *ModelSpec) bool { return a.SelfHosted == b.SelfHosted }},
	{"fallback", func(a, b *ModelSpec) bool { return slices.Equal(a.Fallback, b.Fallback) }},
	{"balance", func(a, b *ModelSpec) bool { return a.Balance == b.Balance }},
}

// maxWeight bounds a deployment's weight, so weights stay small integers.
const maxWeight = 1000

// deployment compiles a later entry of a model's name, fs being its first:
// one more deployment of first, on another provider.
func (c *compiler) deployment(s, fs *ModelSpec, first *Model, p *Policy) *Model {
	d := "models[" + s.Name + "#" + strconv.Itoa(len(first.Deployments)+1) + "]"
	m := *first
	m.Provider, m.Upstream = p.providers[s.Provider], s.Upstream
	if e := p.Catalog[s.Name]; m.Upstream == "" && e != nil && m.Provider != nil && serves(m.Provider.Kind, e.Vendor) {
		m.Upstream = e.Upstream
	}
	if m.Upstream == "" {
		m.Upstream = s.Name
	}
	ok := true
	if m.Provider == nil {
		c.at(s.src, d, "provider", "names no provider (got %q)", s.Provider)
		ok = false
	}
	for _, o := range first.Deployments {
		if m.Provider != nil && o.Provider == m.Provider {
			// One cluster, one breaker and one key pool per provider: two
			// deployments there could not fail over to each other.
			c.at(s.src, d, "provider", "%s already has a deployment on provider %q (%s); another endpoint or key of it is another provider", s.Name, s.Provider, c.where(fs.src))
			ok = false
		}
	}
	if c.idx.lookup(s.src.file, joinPath(s.src.path, "price_usd_per_mtok")) != nil {
		var pok bool
		m.Price, pok = c.prices(s.src, d, s.Price)
		ok = ok && pok
	}
	ok = c.deploymentFields(s, d, &m) && ok
	for _, f := range sharedFields {
		if c.idx.lookup(s.src.file, joinPath(s.src.path, f.key)) != nil && !f.same(s, fs) {
			c.at(s.src, d, f.key, "differs from the first deployment of %s (%s): a model's deployments share what clients see of it, so set it there only", s.Name, c.where(fs.src))
			ok = false
		}
	}
	if !ok {
		return nil
	}
	return &m
}

// where is file:line of the element at src.
func (c *compiler) where(src source) string {
	if n := c.idx.lookup(src.file, src.path); n != nil {
		return src.file + ":" + strconv.Itoa(n.Line)
	}
	return src.file
}

// price converts USD per million tokens to integer micro-USD per million.
func (c *compiler) price(src source, d, field string, usd float64) (int64, bool) {
	if math.IsNaN(usd) || usd < 0 || usd > maxPriceUSDPerMTok {
		c.at(src, d, field, "must be between 0 and %d USD per million tokens", maxPriceUSDPerMTok)
		return 0, false
	}
	return int64(math.Round(usd * 1e6)), true
}

// uniqueName checks the name of a route or tenant (kind): set, well formed
// and not one an earlier entry in seen took; it records the name in seen.
func (c *compiler) uniqueName(src source, d, kind, name string, seen map[string]bool) bool {
	ok := true
	switch {
	case name == "" || !nameRE.MatchString(name):
		c.at(src, d, "name", "is required: letters, digits, '.', '_' or '-'")
		ok = false
	case seen[name]:
		c.at(src, d, "name", "duplicate %s name", kind)
		ok = false
	}
	seen[name] = true
	return ok
}

func (c *compiler) route(s *RouteSpec, i int, paths, names map[string]bool, p *Policy) *Route {
	d := display("routes", i, s.Name)
	ok := c.uniqueName(s.src, d, "route", s.Name, names)
	if !strings.HasPrefix(s.Path, "/") || strings.ContainsAny(s.Path, "?# ") {
		c.at(s.src, d, "path", "must be an absolute path without query, got %q", s.Path)
		ok = false
	} else if paths[s.Path] {
		c.at(s.src, d, "path", "another route already serves %q", s.Path)
		ok = false
	}
	paths[s.Path] = true
	api, known := apis[s.API]
	if !known {
		c.at(s.src, d, "api", "must be one of chat_completions, embeddings, models, admin, usage, feedback, messages, count_tokens, responses, console; got %q", s.API)
		ok = false
	}
	r := &Route{Name: s.Name, Path: s.Path, API: api, Attempts: s.Attempts, PerTryIdleTimeout: time.Duration(s.PerTryIdleTimeout), AnswerTimeout: time.Duration(s.AnswerTimeout), StreamTimeout: time.Duration(s.StreamTimeout),
		FitOutputToContext: s.FitOutputToContext, TagsFromMetadata: s.TagsFromMetadata}
	if s.FitOutputToContext && known && !api.Writes() {
		c.at(s.src, d, "fit_output_to_context", "route api %s has no model write an answer, so no output cap to fit; it applies to chat_completions, messages and responses", s.API)
		ok = false
	}
	if s.TagsFromMetadata && known && !api.Writes() {
		c.at(s.src, d, "tags_from_metadata", "route api %s has no body metadata to take tags from; it applies to chat_completions, messages and responses", s.API)
		ok = false
	}
	redactProbs := len(c.probs)
	r.Redact = c.redaction(s.src, d, s.Redact, api, known)
	ok = ok && len(c.probs) == redactProbs
	if r.Attempts == 0 {
		r.Attempts = DefaultAttempts
	}
	if r.Attempts < 1 || r.Attempts > 10 {
		c.at(s.src, d, "attempts", "must be between 1 and 10")
		ok = false
	}
	if r.PerTryIdleTimeout == 0 {
		r.PerTryIdleTimeout = DefaultPerTryIdleTimeout
	}
	if r.AnswerTimeout == 0 {
		r.AnswerTimeout = max(DefaultAnswerTimeout, r.PerTryIdleTimeout)
	}
	if r.AnswerTimeout < r.PerTryIdleTimeout {
		// Shorter, it would end every silent attempt before it could fail over.
		c.at(s.src, d, "answer_timeout", "must be at least per_try_idle_timeout (%s), got %s", r.PerTryIdleTimeout, r.AnswerTimeout)
		ok = false
	}
	if r.StreamTimeout == 0 {
		r.StreamTimeout = r.AnswerTimeout
	}
	if r.StreamTimeout < r.PerTryIdleTimeout {
		// Shorter, it would end every silent attempt before it could fail over.
		c.at(s.src, d, "stream_timeout", "must be at least per_try_idle_timeout (%s), got %s", r.PerTryIdleTimeout, r.StreamTimeout)
		ok = false
	}
	seen := map[string]bool{}
	for j, f := range s.Filters {
		field := "filters[" + strconv.Itoa(j) + "]"
		where := fmt.Sprintf("%s:%d:%d: %s.%s", s.src.file, f.line, f.col, d, field)
		if f.Name == "" {
			c.at(s.src, d, field, "filter name is required")
			ok = false
			continue
		}
		if seen[f.Name] {
			c.at(s.src, d, field, "filter %q listed twice", f.Name)
			ok = false
		}
		seen[f.Name] = true
		r.Filters = append(r.Filters, FilterRef{Name: f.Name, Shorthand: f.Shorthand, Args: f.Args, Where: where})
	}
	for j, f := range s.Filters {
		if f.Name == "" {
			continue
		}
		ref := FilterRef{Name: f.Name, Shorthand: f.Shorthand, Args: f.Args}
		for _, reason := range filterProblems(ref, seen) {
			c.at(s.src, d, "filters["+strconv.Itoa(j)+"]", "%s", reason)
			ok = false
		}
	}
	var hedged bool
	if r.Hedge, hedged = c.hedge(s.src, d, s.Hedge, r); !hedged {
		ok = false
	}
	before := len(c.probs)
	r.Routing = c.routing(s.src, d, s.Routing, p)
	var hybridOK bool
	if r.Hybrid, hybridOK = c.hybrid(s.src, d, s.Hybrid, r, p); !hybridOK {
		ok = false
	}
	if !ok || len(c.probs) > before {
		return nil
	}
	return r
}

// cacheScopes checks what each route's cache filter applies to, which
// cachespec.Parse cannot see alone: the route serves chat completions (the
// only answers it keeps), and every tenant it names is one of the policy's
// (a misspelt name would silently cache nothing for the tenant meant).
func (c *compiler) cacheScopes(routes []RouteSpec, tenants map[string]bool) {
	c.chatEntries(routes, "cache", "keeps", func(s *RouteSpec, d, field string, ref FilterRef) {
		args, err := cachespec.Parse(ref)
		if err != nil {
			return // reported with the route
		}
		for k, t := range args.Tenants {
			if !tenants[t] {
				c.at(s.src, d, field, "cache args: tenants[%d] names no tenant (got %q)", k, t)
			}
		}
	})
}

// chatEntries hands check every entry of filter name on routes, after
// refusing it on a route that does not serve chat completions (the filter
// "keeps" or "grades" them only).
func (c *compiler) chatEntries(routes []RouteSpec, name, verb string, check func(s *RouteSpec, d, field string, ref FilterRef)) {
	for i := range routes {
		s := &routes[i]
		d := display("routes", i, s.Name)
		for j, f := range s.Filters {
			if f.Name != name {
				continue
			}
			field := "filters[" + strconv.Itoa(j) + "]"
			if a, known := apis[s.API]; known && a != APIChatCompletions {
				c.at(s.src, d, field, "filter %s %s chat completions only; route api is %s", name, verb, s.API)
			}
			check(s, d, field, FilterRef{Name: f.Name, Shorthand: f.Shorthand, Args: f.Args})
		}
	}
}

// Languages the router's detector tells apart (by script; en covers
// text in Latin script).
var languages = map[string]bool{"en": true, "zh": true, "ja": true, "ko": true, "ru": true, "ar": true, "he": true, "hi": true, "th": true, "el": true}

var complexityLevels = map[string]bool{"simple": true, "medium": true, "complex": true}

// DefaultStickiness keeps a user on one model for this long.
const DefaultStickiness = 5 * time.Minute

func (c *compiler) routing(src source, d string, s *RoutingSpec, p *Policy) Routing {
	r := Routing{Strategy: CostOptimized, AutoModel: "auto", Weights: DefaultWeights, MediumAt: 0.4, ComplexAt: 0.7, Stickiness: DefaultStickiness}
	if s == nil {
		return r
	}
	if s.Strategy != "" {
		st, ok := strategies[s.Strategy]
		if !ok {
			c.at(src, d, "routing.strategy", "must be one of cost-optimized, quality-first, latency-first, weighted; got %q", s.Strategy)
		}
		r.Strategy = st
	}
	if s.AutoModel != "" {
		r.AutoModel = s.AutoModel
		if p.Resolve(s.AutoModel).Model != nil || p.aliases[s.AutoModel] != "" {
			c.at(src, d, "routing.auto_model", "%q is a real model or an alias; pick a name no model has", s.AutoModel)
		}
	}
	r.AllowOverride = s.AllowOverride
	r.Fallback = c.models(src, d, "routing.fallback", s.Fallback, p)
	if s.Weights != nil {
		r.Weights = c.weights(src, d, "routing.weights", s.Weights)
	}
	if cx := s.Complexity; cx != nil {
		r.MediumAt, r.ComplexAt = cx.MediumAt, cx.ComplexAt
		if cx.MediumAt <= 0 || cx.ComplexAt <= cx.MediumAt || cx.ComplexAt >= 1 {
			c.at(src, d, "routing.complexity", "needs 0 < medium_at < complex_at < 1")
		}
	}
	if a := s.Auto; a != nil {
		r.Auto = c.auto(src, d, a, s.Complexity != nil)
	}
	if l := s.Learn; l != nil {
		r.Learn = c.learn(src, d, l, r.Strategy)
	}
	for j, rs := range s.Rules {
		field := "routing.rules[" + strconv.Itoa(j) + "]"
		rule := Rule{Name: rs.Name, RouteTo: c.models(src, d, field+".route_to", rs.RouteTo, p)}
		if rs.Name == "" {
			c.at(src, d, field+".name", "is required")
		}
		if len(rs.RouteTo) == 0 {
			c.at(src, d, field+".route_to", "names no model")
		}
		w := rs.When
		rule.When = When{TokenCountAbove: w.TokenCountAbove, RequiresTool: w.RequiresTool, RequiresVision: w.RequiresVision, Sensitive: w.Sensitive, Metadata: w.Metadata}
		for _, lv := range w.Complexity {
			if !complexityLevels[lv] {
				c.at(src, d, field+".when.complexity", "levels are simple, medium and complex; got %q", lv)
			}
		}
		rule.When.Complexity = w.Complexity
		for _, lang := range w.Language {
			if !languages[lang] {
				c.at(src, d, field+".when.language", "unknown language %q (known: ar, el, en, he, hi, ja, ko, ru, th, zh)", lang)
			}
		}
		rule.When.Language = w.Language
		for _, t := range w.Topic {
			rule.When.Topic = append(rule.When.Topic, strings.ToLower(t))
		}
		if len(w.Header) > 0 {
			rule.When.Header = map[string]string{}
			for k, v := range w.Header {
				rule.When.Header[strings.ToLower(k)] = v
			}
		}
		if w.TokenCountAbove < 0 {
			c.at(src, d, field+".when.token_count_above", "must be >= 0")
		}
		if w.TokenCountAbove == 0 && !w.RequiresTool && !w.RequiresVision && !w.Sensitive && len(w.Complexity)+len(w.Topic)+len(w.Language)+len(w.Header)+len(w.Metadata) == 0 {
			c.at(src, d, field+".when", "sets no condition: a rule that always matches hides the strategy")
		}
		r.Rules = append(r.Rules, rule)
	}
	if len(s.Tiers) > 0 {
		r.Tiers = map[string][]*Model{}
		for tier, names := range s.Tiers {
			r.Tiers[tier] = c.models(src, d, "routing.tiers."+tier, names, p)
		}
	}
	if sp := s.Split; sp != nil {
		m := p.Resolve(sp.Model).Model
		if m == nil {
			c.at(src, d, "routing.split.model", "names no model (got %q)", sp.Model)
		}
		if sp.Percent <= 0 || sp.Percent > 100 {
			c.at(src, d, "routing.split.percent", "must be between 1 and 100")
		}
		r.Split = &Split{Model: m, Percent: sp.Percent}
	}
	if s.Stickiness != nil {
		r.Stickiness = time.Duration(*s.Stickiness)
	}
	return r
}

// auto compiles a route's auto-routing target.
func (c *compiler) auto(src source, d string, a *AutoSpec, thresholds bool) *Auto {
	out := &Auto{StrongShare: a.StrongShareMax, QualityTarget: a.QualityTarget, Window: DefaultAutoWindow, MinSamples: DefaultAutoMinSamples}
	switch {
	case thresholds:
		c.at(src, d, "routing.auto", "calibrates the complexity thresholds; drop routing.complexity or routing.auto")
	case a.StrongShareMax == 0 && a.QualityTarget == 0:
		c.at(src, d, "routing.auto", "needs strong_share_max or quality_target")
	case a.StrongShareMax != 0 && a.QualityTarget != 0:
		c.at(src, d, "routing.auto", "sets both strong_share_max and quality_target; pick one")
	case a.StrongShareMax != 0 && (a.StrongShareMax <= 0 || a.StrongShareMax >= 1):
		c.at(src, d, "routing.auto.strong_share_max", "must be between 0 and 1 (exclusive); got %g", a.StrongShareMax)
	case a.QualityTarget != 0 && (a.QualityTarget <= 0 || a.QualityTarget >= 1):
		c.at(src, d, "routing.auto.quality_target", "must be between 0 and 1 (exclusive): a share of the strong models' quality; got %g", a.QualityTarget)
	}
	if a.Window != nil {
		out.Window = time.Duration(*a.Window)
		if out.Window < time.Minute || out.Window > 7*24*time.Hour {
			c.at(src, d, "routing.auto.window", "must be between 1m and 168h")
		}
	}
	if a.MinSamples != 0 {
		out.MinSamples = a.MinSamples
		if a.MinSamples < 10 || a.MinSamples > 1_000_000 {
			c.at(src, d, "routing.auto.min_samples", "must be between 10 and 1000000")
		}
	}
	if j := a.Adjust; j != nil {
		out.Adjust = &Adjust{Min: j.Min, Max: j.Max, QualityBar: j.QualityBar}
		if out.Adjust.QualityBar == 0 {
			out.Adjust.QualityBar = a.QualityTarget
		}
		switch {
		case j.Min < 0 || j.Max > 1 || j.Min >= j.Max:
			c.at(src, d, "routing.auto.adjust", "needs 0 <= min < max <= 1 (the bounds of the strong share); got min %g, max %g", j.Min, j.Max)
		case a.StrongShareMax != 0 && (a.StrongShareMax < j.Min || a.StrongShareMax > j.Max):
			c.at(src, d, "routing.auto.adjust", "bounds [%g, %g] must hold strong_share_max %g", j.Min, j.Max, a.StrongShareMax)
		case j.QualityBar == 0 && a.QualityTarget == 0:
			c.at(src, d, "routing.auto.adjust.quality_bar", "is needed with strong_share_max: the mean rating (0..1) weak-model answers should reach")
		case j.QualityBar < 0 || j.QualityBar >= 1:
			c.at(src, d, "routing.auto.adjust.quality_bar", "must be between 0 and 1 (exclusive); got %g", j.QualityBar)
		}
	}
	return out
}

// learn compiles a route's learning of domain priors.
func (c *compiler) learn(src source, d string, l *LearnSpec, st Strategy) *Learn {
	out := &Learn{HalfLife: DefaultLearnHalfLife, MaxDomains: DefaultLearnMaxDomains, PriorWeight: DefaultLearnPriorWeight, Explore: DefaultLearnExplore}
	if st != CostOptimized && st != Weighted {
		c.at(src, d, "routing.learn", "shifts complexity scores, which strategy %s does not read; use cost-optimized or weighted", st)
	}
	if l.HalfLife != nil {
		out.HalfLife = time.Duration(*l.HalfLife)
		if out.HalfLife < time.Hour || out.HalfLife > 365*24*time.Hour {
			c.at(src, d, "routing.learn.half_life", "must be between 1h and 8760h")
		}
	}
	if l.MaxDomains != 0 {
		out.MaxDomains = l.MaxDomains
		if l.MaxDomains < 1 || l.MaxDomains > 1_000_000 {
			c.at(src, d, "routing.learn.max_domains", "must be between 1 and 1000000")
		}
	}
	if l.PriorWeight != 0 {
		out.PriorWeight = l.PriorWeight
		if !(l.PriorWeight > 0 && l.PriorWeight <= 1000) {
			c.at(src, d, "routing.learn.prior_weight", "must be above 0 and at most 1000 (verdicts); got %g", l.PriorWeight)
		}
	}
	if l.Explore != nil {
		out.Explore = *l.Explore
		if !(out.Explore >= 0 && out.Explore <= 0.5) {
			c.at(src, d, "routing.learn.explore", "must be between 0 and 0.5 (a share of the strong calls); got %g", out.Explore)
		}
	}
	return out
}

func (c *compiler) weights(src source, d, field string, w *WeightsSpec) Weights {
	out := Weights(*w)
	for name, v := range map[string]float64{"cost": w.Cost, "latency": w.Latency, "quality": w.Quality, "health": w.Health, "match": w.Match, "consistency": w.Consistency} {
		if v < 0 || v > 1 {
			c.at(src, d, field+"."+name, "must be between 0 and 1")
		}
	}
	if w.Cost+w.Latency+w.Quality+w.Health+w.Match+w.Consistency == 0 {
		c.at(src, d, field, "are all zero")
	}
	return out
}

// models resolves a list of model names: models of the policy, aliases
// of one, or names a pattern serves.
func (c *compiler) models(src source, d, field string, names []string, p *Policy) []*Model {
	var out []*Model
	for j, n := range names {
		m := p.Resolve(n).Model
		if m == nil {
			c.at(src, d, field+"["+strconv.Itoa(j)+"]", "names no model (got %q)", n)
			continue
		}
		out = append(out, m)
	}
	return out
}

func (c *compiler) tenant(s *TenantSpec, i int, p *Policy, seen map[string]bool) *Tenant {
	d := display("tenants", i, s.Name)
	ok := c.uniqueName(s.src, d, "tenant", s.Name, seen)
	t := &Tenant{Name: s.Name, Tier: s.Tier, Apps: map[string]*App{}}
	t.Models, ok = c.modelSet(s.src, d, "models", s.Models, p, ok)
	before := len(c.probs)
	t.Budget = c.budget(s.src, d, "budget_usd", s.Budget)
	t.RateLimit = c.rateLimit(s.src, d, "rate_limit", s.RateLimit)
	if s.MaxCostPerRequestUSD != nil {
		t.MaxCostPerRequestMicros, _ = c.usd(s.src, d, "max_cost_per_request_usd", *s.MaxCostPerRequestUSD, false)
	}
	switch s.OverBudget {
	case "", "refuse":
	case "downgrade":
		t.Downgrade = true
	default:
		c.at(s.src, d, "over_budget", "must be refuse or downgrade; got %q", s.OverBudget)
	}
	for j, a := range s.Apps {
		field := "apps[" + strconv.Itoa(j) + "]"
		if a.Name == "" || !nameRE.MatchString(a.Name) || t.Apps[a.Name] != nil {
			c.at(s.src, d, field+".name", "is required, unique within the tenant: letters, digits, '.', '_' or '-'")
			continue
		}
		t.Apps[a.Name] = &App{Name: a.Name, Budget: c.budget(s.src, d, field+".budget_usd", a.Budget), RateLimit: c.rateLimit(s.src, d, field+".rate_limit", a.RateLimit)}
	}
	if s.DefaultApp != "" {
		if t.Apps[s.DefaultApp] == nil {
			c.at(s.src, d, "default_app", "names no app of the tenant (got %q)", s.DefaultApp)
		}
		t.DefaultApp = s.DefaultApp
	}
	if s.Audit != nil {
		t.CapturePrompts = s.Audit.CapturePrompts
	} else {
		t.CapturePrompts = c.capture
	}
	t.TagBudgets = c.tagBudgets(s.src, d, s.TagBudgets)
	t.Redact = c.redaction(s.src, d, s.Redact, "", false)
	ok = ok && len(c.probs) == before
	keyNames := map[string]bool{}
	for j, k := range s.Keys {
		field := "keys[" + strconv.Itoa(j) + "]"
		key := &Key{Name: k.Name, App: k.App, DefaultApp: k.DefaultApp, Tenant: t}
		before := len(c.probs)
		key.Budget = c.budget(s.src, d, field+".budget_usd", k.Budget)
		key.RateLimit = c.rateLimit(s.src, d, field+".rate_limit", k.RateLimit)
		if k.MaxCostPerRequestUSD != nil {
			key.MaxCostPerRequestMicros, _ = c.usd(s.src, d, field+".max_cost_per_request_usd", *k.MaxCostPerRequestUSD, false)
		}
		key.Tags = c.tags(s.src, d, field+".tags", k.Tags)
		if k.App != "" && len(s.Apps) > 0 && t.Apps[k.App] == nil {
			c.at(s.src, d, field+".app", "names no app of the tenant (got %q)", k.App)
		}
		switch {
		case k.DefaultApp == "":
		case k.App != "":
			c.at(s.src, d, field+".default_app", "is for keys bound to no app; this key is bound to %q", k.App)
		case t.Apps[k.DefaultApp] == nil:
			c.at(s.src, d, field+".default_app", "names no app of the tenant (got %q)", k.DefaultApp)
		}
		ok = ok && len(c.probs) == before
		if k.Name == "" || keyNames[k.Name] {
			c.at(s.src, d, field+".name", "is required and unique within the tenant")
			ok = false
		}
		keyNames[k.Name] = true
		h, hok := parseSHA256(k.SHA256)
		if !hok {
			c.at(s.src, d, field+".sha256", "must be 64 hex digits (the SHA-256 of the key, never the key)")
			ok = false
		} else if other := p.keys[h]; other != nil {
			c.at(s.src, d, field+".sha256", "the same key is already %s/%s", other.Tenant.Name, other.Name)
			ok = false
		} else if p.Gateway.HasAdminKey && h == p.Gateway.AdminKeyHash {
			// A tenant's key that is also the admin key would let every
			// holder of it run the admin API.
			c.at(s.src, d, field+".sha256", "is the admin key (gateway.admin_key_sha256); the admin key must be no tenant's key")
			ok = false
		}
		key.Hash = h
		key.Models, ok = c.modelSet(s.src, d, field+".models", k.Models, p, ok)
		if hok {
			p.keys[h] = key
		}
		t.Keys = append(t.Keys, key)
	}
	if tr := s.Routing; tr != nil {
		if tr.Strategy != "" {
			st, known := strategies[tr.Strategy]
			if !known {
				c.at(s.src, d, "routing.strategy", "must be one of cost-optimized, quality-first, latency-first, weighted; got %q", tr.Strategy)
				ok = false
			}
			t.Strategy = st
		}
		if tr.Weights != nil {
			before := len(c.probs)
			w := c.weights(s.src, d, "routing.weights", tr.Weights)
			t.Weights = &w
			ok = ok && len(c.probs) == before
		}
	}
	if !ok {
		return nil
	}
	return t
}

// usd converts a USD amount to micro-USD; zero is allowed only when
// zeroOK (a floor), since a zero cap would refuse everything.
func (c *compiler) usd(src source, d, field string, v float64, zeroOK bool) (int64, bool) {
	if math.IsNaN(v) || v < 0 || (!zeroOK && v == 0) || v > 1e9 {
		c.at(src, d, field, "must be a positive amount of USD")
		return 0, false
	}
	return int64(math.Round(v * 1e6)), true
}

func (c *compiler) budget(src source, d, field string, b *BudgetSpec) Budget {
	out := Budget{FailOpen: true}
	if b == nil {
		return out
	}
	if b.Daily != nil {
		out.DailyMicros, _ = c.usd(src, d, field+".daily", *b.Daily, false)
	}
	if b.Monthly != nil {
		out.MonthlyMicros, _ = c.usd(src, d, field+".monthly", *b.Monthly, false)
	}
	if b.Daily == nil && b.Monthly == nil {
		c.at(src, d, field, "sets neither daily nor monthly")
	}
	out.FailOpen = c.outage(src, d, field+".on_store_outage", b.OnStoreOutage)
	return out
}

func (c *compiler) rateLimit(src source, d, field string, r *RateLimitSpec) RateLimit {
	out := RateLimit{FailOpen: true}
	if r == nil {
		return out
	}
	out = RateLimit{ReplenishRate: r.ReplenishRate, BurstCapacity: r.BurstCapacity, RequestsPerMinute: r.RequestsPerMinute, TokensPerMinute: r.TokensPerMinute}
	if r.ReplenishRate < 0 || r.BurstCapacity < 0 || r.RequestsPerMinute < 0 || r.TokensPerMinute < 0 {
		c.at(src, d, field, "limits must be >= 0")
	}
	if (r.ReplenishRate > 0) != (r.BurstCapacity > 0) {
		c.at(src, d, field, "replenish_rate and burst_capacity go together")
	} else if r.BurstCapacity > 0 && float64(r.BurstCapacity) < r.ReplenishRate {
		c.at(src, d, field+".burst_capacity", "must be >= replenish_rate")
	}
	if !out.Set() {
		c.at(src, d, field, "sets no limit")
	}
	out.FailOpen = c.outage(src, d, field+".on_store_outage", r.OnStoreOutage)
	return out
}

func (c *compiler) outage(src source, d, field, v string) bool {
	switch v {
	case "", "open":
		return true
	case "closed":
		return false
	}
	c.at(src, d, field, "must be open or closed; got %q", v)
	return true
}

func (c *compiler) modelSet(src source, d, field string, names []string, p *Policy, ok bool) (map[string]bool, bool) {
	if names == nil {
		return nil, ok
	}
	set := make(map[string]bool, len(names))
	for j, n := range names {
		if !p.Nameable(n) {
			c.at(src, d, field+"["+strconv.Itoa(j)+"]", "names no model (got %q)", n)
			ok = false
		}
		set[n] = true
	}
	return set, ok
}

func parseSHA256(s string) ([32]byte, bool) {
	var h [32]byte
	b, err := hex.DecodeString(strings.ToLower(s))
	if err != nil || len(b) != 32 {
		return h, false
	}
	copy(h[:], b)
	return h, true
}

// loopback reports whether host is this machine, where plain http leaves
// nothing on the network.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
