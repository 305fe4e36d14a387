package policy

import (
	"fmt"
	"time"
)

// lifecycleUse is a place the policy names a catalog model: a models
// entry or an alias.
type lifecycleUse struct {
	at    Problem
	model *Model
}

// Warnings are the policy's problems that do not refuse it, as at now:
// the models it names that their vendor has deprecated or retired. `make
// check-config` prints them; the processes log them on every load.
func (p *Policy) Warnings(now time.Time) Problems {
	var out Problems
	for _, u := range p.lifecycle {
		m := u.model
		var reason string
		switch {
		case m.RetiredAt(now):
			reason = fmt.Sprintf("%s was retired by its vendor on %s%s; %s", m.Name, day(m.RetiredOn), successorOf(m), p.retiredAnswer())
		case !m.DeprecatedOn.IsZero() && !now.Before(m.DeprecatedOn):
			reason = fmt.Sprintf("%s is deprecated since %s%s", m.Name, day(m.DeprecatedOn), successorOf(m))
			if !m.RetiredOn.IsZero() {
				reason += "; its vendor retires it on " + day(m.RetiredOn)
			}
		default:
			continue
		}
		w := u.at
		w.Reason = reason
		out = append(out, w)
	}
	return out
}

// retiredAnswer says what requests for a retired model get under the
// policy's gateway.retired_models.
func (p *Policy) retiredAnswer() string {
	switch p.Gateway.RetiredModels {
	case RetiredSubstitute:
		return "its requests go to the successor (gateway.retired_models: substitute)"
	case RetiredServe:
		return "its requests are sent as named (gateway.retired_models: serve)"
	}
	return "its requests are refused, naming the successor (gateway.retired_models: refuse)"
}

func successorOf(m *Model) string {
	if m.Successor == "" {
		return ""
	}
	return " (successor: " + m.Successor + ")"
}

func day(t time.Time) string { return t.Format(time.DateOnly) }

// retiredModels compiles gateway.retired_models.
func (c *compiler) retiredModels(src source, v string) Retired {
	if v == "" {
		return RetiredRefuse
	}
	r, ok := retiredModes[v]
	if !ok {
		c.at(src, "gateway", "retired_models", "must be refuse, substitute or serve; got %q", v)
	}
	return r
}
