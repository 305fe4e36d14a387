package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
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

// Languages the router's detector tells apart (by script; en covers
// text in Latin script).
var languages = map[string]bool{"en": true, "zh": true, "ja": true, "ko": true, "ru": true, "ar": true, "he": true, "hi": true, "th": true, "el": true}

var complexityLevels = map[string]bool{"simple": true, "medium": true, "complex": true}

// DefaultStickiness keeps a user on one model for this long.
const DefaultStickiness = 5 * time.Minute

// usd converts a USD amount to micro-USD; zero is allowed only when
// zeroOK (a floor), since a zero cap would refuse everything.
func (c *compiler) usd(src source, d, field string, v float64, zeroOK bool) (int64, bool) {
	if math.IsNaN(v) || v < 0 || (!zeroOK && v == 0) || v > 1e9 {
		c.at(src, d, field, "must be a positive amount of USD")
		return 0, false
	}
	return int64(math.Round(v * 1e6)), true
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
