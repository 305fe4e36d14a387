package policy

import "github.com/switchyard/switchyard/filters/judge/judgespec"

// judgeScopes checks what judgespec.Parse cannot see alone: the judge
// grades chat completions, and its models are chat models of the policy.
func (c *compiler) judgeScopes(routes []RouteSpec, p *Policy) {
	c.chatEntries(routes, "judge", "grades", func(s *RouteSpec, d, field string, ref FilterRef) {
		args, err := judgespec.Parse(ref)
		if err != nil {
			return // reported with the route
		}
		for _, m := range []struct{ field, name string }{{"model", args.Model}, {"reference", args.Reference}, {"weak", args.Weak}} {
			if m.name == "" {
				continue
			}
			if model := p.models[m.name]; model == nil || !model.Caps.Has(CapChat) {
				c.at(s.src, d, field, "judge args: %s names no chat model of the policy (got %q)", m.field, m.name)
			}
		}
	})
}
