package policy

// Resolution is what a model name a client sent stands for.
type Resolution struct {
	// Model serves the name; nil when nothing does, or when the name is
	// an alias of auto.
	Model *Model
	// Alias is the alias the client used, "" when the name is not one.
	Alias string
	// Auto is set for an alias that lets the route's router choose.
	Auto bool
	// Refused is the pattern that matched the name but serves only the
	// catalog's models; nil otherwise.
	Refused *Pattern
}

// Resolve says what a model name a client sent stands for: an alias
// first, then a model of the policy, then the first pattern that matches
// it.
func (p *Policy) Resolve(name string) Resolution {
	target, ok := p.aliases[name]
	if !ok {
		return p.resolveName(name)
	}
	if target == AliasAuto {
		return Resolution{Alias: name, Auto: true}
	}
	r := p.resolveName(target)
	r.Alias = name
	return r
}

// resolveName resolves a name that is not an alias.
func (p *Policy) resolveName(name string) Resolution {
	if m := p.models[name]; m != nil {
		return Resolution{Model: m}
	}
	for _, pt := range p.Patterns {
		if !pt.matches(name) {
			continue
		}
		if m := pt.serve(name); m != nil {
			return Resolution{Model: m}
		}
		return Resolution{Refused: pt}
	}
	return Resolution{}
}

// Aliases returns every alias with the name it stands for.
func (p *Policy) Aliases() map[string]string { return p.aliases }

// maxSuccessors bounds how far a chain of retired successors is followed.
const maxSuccessors = 8

// Successor returns what serves requests for m once its vendor has
// retired it at now: its successor, or the successor's, the first that is
// not retired and that the policy serves; nil when none is.
func (p *Policy) Successor(m *Model, retiredAt func(*Model) bool) *Model {
	for range maxSuccessors {
		if m.Successor == "" {
			return nil
		}
		next := p.Resolve(m.Successor).Model
		if next == nil {
			return nil
		}
		if !retiredAt(next) {
			return next
		}
		m = next
	}
	return nil
}

// MayServe reports whether a caller may have m serve a request it sent
// under alias ("" when it named no alias): its key's and tenant's lists
// may name the model, the alias, or the pattern that serves it.
func MayServe(k *Key, t *Tenant, m *Model, alias string) bool {
	names := []string{m.Name}
	if alias != "" {
		names = append(names, alias)
	}
	if m.Pattern != nil {
		names = append(names, m.Pattern.Match)
	}
	allows := func(list map[string]bool) bool {
		if list == nil {
			return true
		}
		for _, n := range names {
			if list[n] {
				return true
			}
		}
		return false
	}
	if k != nil {
		return allows(k.Models) && allows(k.Tenant.Models)
	}
	return t == nil || allows(t.Models)
}

// Nameable reports whether a key's or tenant's model list may name n: a
// model, an alias, a pattern, or a name a pattern serves.
func (p *Policy) Nameable(n string) bool {
	if r := p.Resolve(n); r.Model != nil || r.Auto {
		return true
	}
	for _, pt := range p.Patterns {
		if pt.Match == n {
			return true
		}
	}
	return false
}
