package policy

import (
	"math"
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/configs/modelcatalog"
)

// CatalogSpec is one model of the catalog: what it is, what it costs and
// when its vendor retires it. The shipped catalog (configs/modelcatalog) holds
// the models the project knows; a policy's catalog section adds more or
// replaces one by name.
type CatalogSpec struct {
	src  source
	Name string `yaml:"name"`
	// Vendor is who makes the model: anthropic, openai, google, mistral,
	// meta... It decides which provider kinds serve it (vendorServedBy).
	Vendor string `yaml:"vendor"`
	// Upstream is the vendor's id for it (default: Name).
	Upstream        string     `yaml:"upstream"`
	ContextWindow   int        `yaml:"context_window"`
	MaxOutputTokens int        `yaml:"max_output_tokens"`
	Capabilities    []string   `yaml:"capabilities"`
	Price           *PriceSpec `yaml:"price_usd_per_mtok"`
	// ServerTools prices the tools the vendor runs for the model, in USD
	// per 1,000 uses (web_search).
	ServerTools map[string]float64 `yaml:"server_tools_usd_per_1k"`
	Quality     *float64           `yaml:"quality"`
	// DeprecatedOn and RetiredOn are the vendor's dates; Successor is the
	// catalog model it recommends instead.
	DeprecatedOn Date   `yaml:"deprecated_on"`
	RetiredOn    Date   `yaml:"retired_on"`
	Successor    string `yaml:"successor"`
	// Source is where the figures come from (docs/MODELS.md dates them).
	Source string `yaml:"source"`
}

// CatalogEntry is a compiled catalog model.
type CatalogEntry struct {
	Name, Vendor, Upstream string
	ContextWindow          int
	MaxOutputTokens        int
	Caps                   Capability
	Price                  Price
	ToolPrices             map[string]int64
	// Quality is nil when the catalog ranks nothing (the default, 0.5,
	// applies).
	Quality                 *float64
	DeprecatedOn, RetiredOn time.Time
	Successor               string
	Source                  string
	capNames                []string
}

// Date is a calendar day written 2006-01-02, as midnight UTC.
type Date time.Time

// UnmarshalYAML implements [yaml.Unmarshaler].
func (d *Date) UnmarshalYAML(n *yaml.Node) error {
	t, err := time.Parse(time.DateOnly, n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		return errAt(n, "must be a date such as 2026-12-05, got %q", n.Value)
	}
	*d = Date(t)
	return nil
}

// serverTools are the tools a vendor runs and prices per use.
var serverTools = map[string]bool{"web_search": true}

// vendorServedBy says which provider kinds serve a vendor's models; an
// OpenAI-compatible server (vLLM, Mistral's API) may serve anyone's.
var vendorServedBy = map[string][]Kind{
	"openai":    {KindOpenAI, KindAzureOpenAI, KindOpenAICompatible},
	"anthropic": {KindAnthropic, KindOpenAICompatible},
	"google":    {KindGemini, KindOpenAICompatible},
}

// serves reports whether a provider of kind k serves vendor's models.
func serves(k Kind, vendor string) bool {
	kinds, known := vendorServedBy[vendor]
	return !known && k == KindOpenAICompatible || slices.Contains(kinds, k)
}

// catalogFile is the shipped catalog as a policy file, read first so a
// policy's own catalog entries come after it.
func catalogFile() File { return File{Name: modelcatalog.Name, Data: modelcatalog.YAML} }

// withCatalog is what a policy's files compile from, and what its
// version is a hash of: the shipped catalog, then the files.
func withCatalog(files []File) []File { return append([]File{catalogFile()}, files...) }

// catalog compiles the catalog entries, a later entry of a name replacing
// an earlier one (the policy's own replace the shipped ones).
func (c *compiler) catalog(specs []CatalogSpec) map[string]*CatalogEntry {
	out := map[string]*CatalogEntry{}
	for i := range specs {
		s := &specs[i]
		d := display("catalog", i, s.Name)
		if !c.newName(s.src, d, "catalog", s.Name, false) {
			continue
		}
		if e := c.catalogEntry(s, d); e != nil {
			out[e.Name] = e
		}
	}
	for i := range specs {
		s := &specs[i]
		if e := out[s.Name]; e != nil && e.Successor != "" && out[e.Successor] == nil {
			c.at(s.src, display("catalog", i, s.Name), "successor", "names no catalog model (got %q)", e.Successor)
		}
	}
	return out
}

func (c *compiler) catalogEntry(s *CatalogSpec, d string) *CatalogEntry {
	before := len(c.probs)
	e := &CatalogEntry{
		Name: s.Name, Vendor: s.Vendor, Upstream: s.Upstream, ContextWindow: s.ContextWindow, MaxOutputTokens: s.MaxOutputTokens,
		Quality: s.Quality, DeprecatedOn: time.Time(s.DeprecatedOn), RetiredOn: time.Time(s.RetiredOn), Successor: s.Successor,
		Source: s.Source, capNames: s.Capabilities,
	}
	if e.Upstream == "" {
		e.Upstream = e.Name
	}
	if s.Vendor == "" || !nameRE.MatchString(s.Vendor) {
		c.at(s.src, d, "vendor", "is required: who makes the model (anthropic, openai, google, mistral, meta...)")
	}
	e.Caps = c.capabilities(s.src, d, s.Capabilities)
	if e.ContextWindow <= 0 {
		c.at(s.src, d, "context_window", "must be > 0")
	}
	if e.Caps.Has(CapChat) && e.MaxOutputTokens <= 0 {
		c.at(s.src, d, "max_output_tokens", "must be > 0")
	}
	if s.Price == nil {
		c.at(s.src, d, "price_usd_per_mtok", "is required: a catalog model's cost is never unknown")
	} else {
		e.Price, _ = c.prices(s.src, d, *s.Price)
	}
	for tool, usd := range s.ServerTools {
		if !serverTools[tool] {
			c.at(s.src, d, "server_tools_usd_per_1k", "unknown tool %q (known: web_search)", tool)
			continue
		}
		if math.IsNaN(usd) || usd < 0 || usd > maxPriceUSDPerMTok {
			c.at(s.src, d, "server_tools_usd_per_1k."+tool, "must be between 0 and %d USD per 1,000 uses", maxPriceUSDPerMTok)
			continue
		}
		if e.ToolPrices == nil {
			e.ToolPrices = map[string]int64{}
		}
		// USD per 1,000 uses is milli-USD per use: 1,000 micro-USD each.
		e.ToolPrices[tool] = int64(math.Round(usd * 1000))
	}
	if q := s.Quality; q != nil && (*q < 0 || *q > 1) {
		c.at(s.src, d, "quality", "must be between 0 and 1")
	}
	if !e.RetiredOn.IsZero() && e.Successor == "" {
		c.at(s.src, d, "successor", "is required with retired_on: what its requests go to, or what their error names")
	}
	if !e.DeprecatedOn.IsZero() && !e.RetiredOn.IsZero() && e.RetiredOn.Before(e.DeprecatedOn) {
		c.at(s.src, d, "retired_on", "is before deprecated_on")
	}
	if e.Successor == e.Name && e.Name != "" {
		c.at(s.src, d, "successor", "is the model itself")
	}
	if len(c.probs) > before {
		return nil
	}
	return e
}

// capabilities compiles a capability list; none means chat and stream.
func (c *compiler) capabilities(src source, d string, names []string) Capability {
	var caps Capability
	for j, name := range names {
		cp, known := capabilities[name]
		if !known {
			c.at(src, d, "capabilities["+strconv.Itoa(j)+"]", "unknown capability %q (known: chat, tools, vision, json, stream, embeddings)", name)
		}
		caps |= cp
	}
	if caps == 0 {
		caps = CapChat | CapStream
	}
	return caps
}

// fromCatalog fills what a model entry leaves unset from its catalog
// entry: the one it names with catalog, else the one of its name when the
// entry's vendor is one its provider serves. It returns the filled copy,
// the entry (nil when none) and whether the price is the entry's.
func (c *compiler) fromCatalog(s *ModelSpec, d string, p *Policy) (ModelSpec, *CatalogEntry, bool) {
	out := *s
	prov := p.providers[s.Provider]
	var e *CatalogEntry
	switch {
	case s.Catalog != "":
		if e = p.Catalog[s.Catalog]; e == nil {
			c.at(s.src, d, "catalog", "names no catalog model (got %q; see docs/MODELS.md)", s.Catalog)
			return out, nil, false
		}
		if prov != nil && !serves(prov.Kind, e.Vendor) {
			c.at(s.src, d, "catalog", "%s is %s's model; provider %s (%s) does not serve it", e.Name, e.Vendor, prov.Name, prov.Kind)
			return out, nil, false
		}
	case p.Catalog[s.Name] != nil && prov != nil && serves(prov.Kind, p.Catalog[s.Name].Vendor):
		e = p.Catalog[s.Name]
	default:
		return out, nil, false
	}
	if out.Upstream == "" {
		out.Upstream = e.Upstream
	}
	if out.ContextWindow == 0 {
		out.ContextWindow = e.ContextWindow
	}
	if out.MaxOutputTokens == 0 {
		out.MaxOutputTokens = e.MaxOutputTokens
	}
	if out.Capabilities == nil {
		out.Capabilities = e.capNames
	}
	if out.Quality == nil {
		out.Quality = e.Quality
	}
	return out, e, c.idx.lookup(s.src.file, joinPath(s.src.path, "price_usd_per_mtok")) == nil
}

// lifecycleOf copies the catalog's dates onto a model.
func lifecycleOf(m *Model, e *CatalogEntry) {
	m.Vendor, m.ToolPrices = e.Vendor, e.ToolPrices
	m.DeprecatedOn, m.RetiredOn, m.Successor = e.DeprecatedOn, e.RetiredOn, e.Successor
}
