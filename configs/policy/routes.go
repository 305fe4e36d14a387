package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/filters/cache/cachespec"
)

// route compiles one entry of the routes section.
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
