package policy

import (
	"regexp"
	"slices"
	"strings"
)

// Pattern is a compiled models entry with match: every name it matches
// is a model of its provider, sent upstream as named. A name the catalog
// knows is priced from the catalog; any other is what Unpriced says.
type Pattern struct {
	// Match is the pattern as written: '*' stands for any run of
	// characters ("claude-*", "openai/*").
	Match    string
	Provider *Provider
	Unpriced Unpriced
	// template is what a name the catalog does not know is served as:
	// the pattern's capabilities, limits and price.
	template Model
	// known are the catalog's models the pattern matches that its
	// provider serves, by catalog name.
	known map[string]*Model
	// prefix is "<provider>/" when Match starts with it: a name
	// "openai/gpt-7" goes upstream as "gpt-7".
	prefix string
	parts  []string
}

// Unpriced is what a pattern does with a name the catalog does not
// price.
type Unpriced string

// The unpriced rules.
const (
	// UnpricedRefuse: 404, as if the name were unknown; the pattern
	// serves only the catalog's models (a closed pattern).
	UnpricedRefuse Unpriced = "refuse"
	// UnpricedWorstCase: served and charged at the pattern's stated
	// price (ledger price_source "pattern").
	UnpricedWorstCase Unpriced = "worst_case"
	// UnpricedDearest: served and charged at the highest prices of the
	// catalog models the pattern matches (price_source "estimated").
	UnpricedDearest Unpriced = "dearest"
)

var unpricedRules = map[string]Unpriced{"refuse": UnpricedRefuse, "worst_case": UnpricedWorstCase, "dearest": UnpricedDearest}

// Open reports whether the pattern serves names the catalog does not
// know.
func (pt *Pattern) Open() bool { return pt.Unpriced != UnpricedRefuse }

// Known lists the catalog models the pattern serves, by name.
func (pt *Pattern) Known() []*Model {
	out := make([]*Model, 0, len(pt.known))
	for _, name := range sortedKeys(pt.known) {
		out = append(out, pt.known[name])
	}
	return out
}

// Price is what a name the catalog does not know is charged at (zero for
// a closed pattern).
func (pt *Pattern) Price() Price { return pt.template.Price }

// requestedName is what a name a client sends under a pattern may look
// like: it goes upstream as is, into a JSON body or a URL path.
var requestedName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$`)

// patternText is what a pattern may hold: a name's characters and '*'.
var patternText = regexp.MustCompile(`^[A-Za-z0-9._:@/*-]{1,128}$`)

// matches reports whether name matches the pattern.
func (pt *Pattern) matches(name string) bool {
	return requestedName.MatchString(name) && globMatch(pt.parts, name)
}

// globMatch reports whether s is parts joined by runs of any characters
// (parts is a pattern split at '*').
func globMatch(parts []string, s string) bool {
	if len(parts) == 1 {
		return s == parts[0]
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// serve returns the model name stands for under the pattern: the
// catalog's, or one made for the name when the pattern is open; nil when
// the pattern refuses it.
func (pt *Pattern) serve(name string) *Model {
	upstream := strings.TrimPrefix(name, pt.prefix)
	if m := pt.known[upstream]; m != nil {
		return m
	}
	if !pt.Open() {
		return nil
	}
	m := pt.template
	m.Name, m.Upstream, m.series = name, upstream, pt.Match
	m.Deployments = []*Model{&m}
	return &m
}

// Pattern defaults: what a name the catalog does not know is assumed to
// take, write and do, unless the pattern says otherwise. They bound the
// reservation of its worst case, so they are the frontier models' of
// December 2026, not a small model's.
const (
	defaultPatternContext = 1_050_000
	defaultPatternOutput  = 128_000
)

var defaultPatternCaps = CapChat | CapTools | CapVision | CapJSON | CapStream

// patternFields are the fields a pattern may set; the others describe one
// model (its upstream name, its deployments' weights and limits).
var patternFields = []string{"match", "provider", "capabilities", "context_window", "max_output_tokens", "price_usd_per_mtok", "unpriced", "quality"}

// patterns compiles the models entries with match, in order.
func (c *compiler) patterns(specs []ModelSpec, p *Policy) {
	for i := range specs {
		s := &specs[i]
		if s.Match == "" {
			continue
		}
		if pt := c.pattern(s, display("models", i, s.Match), p); pt != nil {
			p.Patterns = append(p.Patterns, pt)
		}
	}
}

func (c *compiler) pattern(s *ModelSpec, d string, p *Policy) *Pattern {
	before := len(c.probs)
	if n := c.idx.lookup(s.src.file, s.src.path); n != nil {
		for k := 0; k+1 < len(n.Content); k += 2 {
			if key := n.Content[k].Value; !slices.Contains(patternFields, key) {
				c.at(s.src, d, key, "does not apply to a pattern (it may set %s)", strings.Join(patternFields, ", "))
			}
		}
	}
	pt := &Pattern{Match: s.Match, Provider: p.providers[s.Provider], Unpriced: UnpricedRefuse, parts: strings.Split(s.Match, "*")}
	switch {
	case !patternText.MatchString(s.Match) || !strings.Contains(s.Match, "*") || strings.Contains(s.Match, "**"):
		c.at(s.src, d, "match", "must be a name with one or more '*' (any run of characters), such as claude-* or openai/*; got %q", s.Match)
	case s.Provider == "":
		c.at(s.src, d, "provider", "is required: the provider a pattern's models are sent to")
	case pt.Provider == nil:
		c.at(s.src, d, "provider", "names no provider (got %q)", s.Provider)
	}
	if s.Unpriced != "" {
		u, known := unpricedRules[s.Unpriced]
		if !known {
			c.at(s.src, d, "unpriced", "must be refuse, worst_case or dearest; got %q", s.Unpriced)
		}
		pt.Unpriced = u
	}
	if len(c.probs) > before {
		return nil
	}
	if prefix := pt.Provider.Name + "/"; strings.HasPrefix(s.Match, prefix) {
		pt.prefix = prefix
	}
	pt.known = c.knownModels(pt, p)
	t := &pt.template
	*t = Model{Provider: pt.Provider, Caps: defaultPatternCaps, ContextWindow: s.ContextWindow, MaxOutputTokens: s.MaxOutputTokens, Quality: quality(s.Quality), Pattern: pt, Balance: BalanceWeighted, Weight: 1}
	if s.Capabilities != nil {
		t.Caps = c.capabilities(s.src, d, s.Capabilities)
	}
	if t.ContextWindow == 0 {
		t.ContextWindow = defaultPatternContext
	}
	if t.MaxOutputTokens == 0 {
		t.MaxOutputTokens = defaultPatternOutput
	}
	if t.ContextWindow < 0 || t.MaxOutputTokens < 0 {
		c.at(s.src, d, "context_window", "context_window and max_output_tokens must be > 0")
	}
	t.DefaultMaxTokens = min(t.MaxOutputTokens, 4096)
	if q := t.Quality; q < 0 || q > 1 {
		c.at(s.src, d, "quality", "must be between 0 and 1")
	}
	priced := c.idx.lookup(s.src.file, joinPath(s.src.path, "price_usd_per_mtok")) != nil
	switch pt.Unpriced {
	case UnpricedWorstCase:
		if !priced {
			c.at(s.src, d, "price_usd_per_mtok", "is required with unpriced: worst_case: the price a model the catalog does not know is charged at")
			break
		}
		t.Price, _ = c.prices(s.src, d, s.Price)
		t.PriceSource = PricePattern
	case UnpricedDearest:
		if len(pt.known) == 0 {
			c.at(s.src, d, "unpriced", "dearest needs a catalog model the pattern matches, to take the price of; none does")
		}
		t.Price, t.PriceSource = dearest(pt.known), PriceEstimated
	}
	if priced && pt.Unpriced != UnpricedWorstCase {
		c.at(s.src, d, "price_usd_per_mtok", "applies with unpriced: worst_case only (the catalog prices the names it knows)")
	}
	if len(c.probs) > before {
		return nil
	}
	return pt
}

// knownModels are the catalog's models pt matches and its provider
// serves, ready to serve.
func (c *compiler) knownModels(pt *Pattern, p *Policy) map[string]*Model {
	known := map[string]*Model{}
	stripped := strings.Split(strings.TrimPrefix(pt.Match, pt.prefix), "*")
	for name, e := range p.Catalog {
		if !serves(pt.Provider.Kind, e.Vendor) || !globMatch(stripped, name) {
			continue
		}
		m := &Model{
			Name: name, Upstream: e.Upstream, Provider: pt.Provider, ContextWindow: e.ContextWindow, MaxOutputTokens: e.MaxOutputTokens,
			DefaultMaxTokens: min(e.MaxOutputTokens, 4096), Caps: e.Caps, Price: e.Price, PriceSource: PriceCatalog,
			Quality: quality(e.Quality), Pattern: pt, Balance: BalanceWeighted, Weight: 1,
		}
		lifecycleOf(m, e)
		m.Deployments = []*Model{m}
		known[name] = m
	}
	return known
}

// dearest is, rate by rate, the highest price of models: a ceiling for a
// sibling the catalog does not know yet.
func dearest(models map[string]*Model) Price {
	var out Price
	for _, m := range models {
		// A long tier is dearer than the short one; its rates bound both.
		r := m.Price.tier(m.Price.LongAbove + 1)
		out.InputPerMTok = max(out.InputPerMTok, m.Price.InputPerMTok, r.InputPerMTok)
		out.OutputPerMTok = max(out.OutputPerMTok, m.Price.OutputPerMTok, r.OutputPerMTok)
		out.CachedInputPerMTok = max(out.CachedInputPerMTok, m.Price.CachedInputPerMTok, r.CachedInputPerMTok)
		out.CacheWritePerMTok = max(out.CacheWritePerMTok, m.Price.CacheWritePerMTok, r.CacheWritePerMTok)
		out.CacheWrite1hPerMTok = max(out.CacheWrite1hPerMTok, m.Price.CacheWrite1hPerMTok, r.CacheWrite1hPerMTok)
	}
	return out
}

// quality is a model's quality, 0.5 when unranked.
func quality(q *float64) float64 {
	if q == nil {
		return 0.5
	}
	return *q
}
