package policy

import "strconv"

// HybridSpec is a route's hybrid mode (the seed's "one request sent to
// several providers, the best answer kept"): a chat request for the model
// Model goes to every model of Models at once, and one answer is kept.
type HybridSpec struct {
	// Model is the name a client sends to ask for it (default "hybrid").
	Model string `yaml:"model"`
	// Models answer each request, 2 to 4 of them.
	Models []string `yaml:"models"`
	// Pick chooses the answer kept: first (the first acceptable answer;
	// the others are cancelled), cheapest-acceptable (every answer, then
	// the cheapest acceptable one) or judge (every answer, then the Judge
	// model says which is best).
	Pick string `yaml:"pick"`
	// Judge is the model that picks, with pick: judge.
	Judge string `yaml:"judge"`
}

// HybridPick is how a hybrid request keeps one answer.
type HybridPick string

// The picks.
const (
	PickFirst              HybridPick = "first"
	PickCheapestAcceptable HybridPick = "cheapest-acceptable"
	PickJudge              HybridPick = "judge"
)

var picks = map[string]HybridPick{"first": PickFirst, "cheapest-acceptable": PickCheapestAcceptable, "judge": PickJudge}

// Hybrid is a route's compiled hybrid mode.
type Hybrid struct {
	// Name is the model name that asks for it.
	Name   string
	Models []*Model
	Pick   HybridPick
	// Judge is set with PickJudge.
	Judge *Model
}

// DefaultHybridModel is the name clients send for a hybrid answer.
const DefaultHybridModel = "hybrid"

// Bounds of a hybrid fan-out: one model is no fan-out, and each more
// model is one more answer paid for.
const (
	minHybridModels = 2
	maxHybridModels = 4
)

// hybrid compiles a route's hybrid mode, nil when it has none.
func (c *compiler) hybrid(src source, d string, s *HybridSpec, r *Route, p *Policy) (*Hybrid, bool) {
	if s == nil {
		return nil, true
	}
	ok := true
	if r.API != APIChatCompletions {
		c.at(src, d, "hybrid", "only chat_completions routes pick among answers; this one serves %s", r.API)
		ok = false
	}
	h := &Hybrid{Name: s.Model, Pick: picks[s.Pick]}
	if h.Name == "" {
		h.Name = DefaultHybridModel
	}
	switch {
	case !nameRE.MatchString(h.Name):
		c.at(src, d, "hybrid.model", "%q is not a valid model name", h.Name)
		ok = false
	case p.Resolve(h.Name).Model != nil || p.Resolve(h.Name).Auto || h.Name == r.Routing.AutoModel:
		c.at(src, d, "hybrid.model", "%q already names a model, an alias or auto routing; a hybrid answer needs a name of its own", h.Name)
		ok = false
	}
	if len(s.Models) < minHybridModels || len(s.Models) > maxHybridModels {
		c.at(src, d, "hybrid.models", "needs %d to %d models, got %d", minHybridModels, maxHybridModels, len(s.Models))
		ok = false
	}
	seen := map[string]bool{}
	for i, name := range s.Models {
		field := "hybrid.models[" + strconv.Itoa(i) + "]"
		m := p.Model(name)
		switch {
		case m == nil:
			c.at(src, d, field, "%q is not a model of the policy", name)
			ok = false
		case !m.Caps.Has(CapChat):
			c.at(src, d, field, "%q is not a chat model", name)
			ok = false
		case seen[name]:
			c.at(src, d, field, "%q is listed twice", name)
			ok = false
		default:
			h.Models = append(h.Models, m)
		}
		seen[name] = true
	}
	if h.Pick == "" {
		c.at(src, d, "hybrid.pick", "must be one of first, cheapest-acceptable, judge; got %q", s.Pick)
		ok = false
	}
	switch {
	case h.Pick == PickJudge && s.Judge == "":
		c.at(src, d, "hybrid.judge", "is required with pick: judge: the model that says which answer is best")
		ok = false
	case h.Pick != PickJudge && s.Judge != "":
		c.at(src, d, "hybrid.judge", "only applies to pick: judge")
		ok = false
	case s.Judge != "":
		if h.Judge = p.Model(s.Judge); h.Judge == nil || !h.Judge.Caps.Has(CapChat) {
			c.at(src, d, "hybrid.judge", "%q is not a chat model of the policy", s.Judge)
			ok = false
		}
	}
	return h, ok
}
