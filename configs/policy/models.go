package policy

import "strconv"

// model compiles the first entry of a name in the models section, filled
// from the catalog: what the model is and its first deployment
// (deployment compiles the later ones).
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
