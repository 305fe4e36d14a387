package policy

import "strings"

// AliasSpec is a name clients send that stands for another: a model of
// the policy, a name a pattern serves, another alias, or auto (the
// route's router chooses).
type AliasSpec struct {
	src  source
	Name string `yaml:"name"`
	To   string `yaml:"to"`
}

// AliasAuto is the target of an alias that lets the route's router choose
// the model, as the route's auto_model does.
const AliasAuto = "auto"

// aliases compiles the aliases: each one's chain is followed to the name
// it finally stands for, which must be servable.
func (c *compiler) aliases(specs []AliasSpec, p *Policy) {
	to := map[string]string{}
	where := map[string]int{}
	for i := range specs {
		s := &specs[i]
		d := display("aliases", i, s.Name)
		switch {
		case !c.newName(s.src, d, "alias", s.Name, where[s.Name] > 0):
		case p.models[s.Name] != nil:
			c.at(s.src, d, "name", "is a model of the policy; an alias needs a name of its own")
		case s.Name == AliasAuto:
			c.at(s.src, d, "name", "%q asks the router to choose; it cannot be an alias", AliasAuto)
		case s.To == "":
			c.at(s.src, d, "to", "is required: the model (or alias, or auto) the name stands for")
		default:
			to[s.Name], where[s.Name] = s.To, i+1
		}
	}
	p.aliases = map[string]string{}
	looped := map[string]bool{} // aliases of a loop already reported
	for i := range specs {
		s := &specs[i]
		if where[s.Name] != i+1 || looped[s.Name] {
			continue
		}
		d := display("aliases", i, s.Name)
		chain, seen := []string{s.Name}, map[string]bool{s.Name: true}
		target := to[s.Name]
		for to[target] != "" && !seen[target] {
			chain, seen[target] = append(chain, target), true
			target = to[target]
		}
		if seen[target] {
			c.at(s.src, d, "to", "alias loop: %s", strings.Join(append(chain, target), " -> "))
			for _, a := range chain {
				looped[a] = true
			}
			continue
		}
		if target != AliasAuto && p.resolveName(target).Model == nil {
			c.at(s.src, d, "to", "names no model (got %q): neither a model of the policy nor a name a pattern serves", target)
			continue
		}
		p.aliases[s.Name] = target
		if m := p.resolveName(target).Model; m != nil && p.models[target] == nil && (!m.RetiredOn.IsZero() || !m.DeprecatedOn.IsZero()) {
			p.lifecycle = append(p.lifecycle, lifecycleUse{at: c.locate(s.src, d, "to"), model: m})
		}
	}
}
