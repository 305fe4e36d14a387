package router

import (
	"strconv"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/router/complexity"
	"github.com/switchyard/switchyard/state/priors"
)

// learning is a route's learning of domain priors (routing.learn): each
// auto-routed request's complexity score is shifted by what verdicts
// taught of its domain, a tenant's app under one system prompt.
type learning struct {
	route *priors.Route
}

func newLearning(l *priors.Learner, r *policy.Route) (*learning, error) {
	curve, err := complexity.DefaultCurve()
	if err != nil {
		return nil, err
	}
	c := r.Routing.Learn
	pr, err := l.Track(r.Name, priors.Config{
		Curve: curve.Quality, HalfLife: c.HalfLife, MaxDomains: c.MaxDomains,
		PriorWeight: c.PriorWeight, Explore: c.Explore,
	})
	if err != nil {
		return nil, err
	}
	return &learning{route: pr}, nil
}

// domain is the request's domain: its tenant, its app and the
// fingerprint of its system prompt (the first system or developer
// message), or the app's fallback domain without one.
func (l *learning) domain(q *Query) *priors.Domain {
	var p priors.Print
	for i := range q.Chat.Messages {
		m := &q.Chat.Messages[i]
		if m.Role != "system" && m.Role != "developer" {
			continue
		}
		if !m.Content.IsParts {
			p.Add(m.Content.Text)
		}
		// Parts read as their plain text: joined by newlines.
		sep := ""
		for _, part := range m.Content.Parts {
			if part.Type == "text" {
				p.Add(sep)
				p.Add(part.Text)
				sep = "\n"
			}
		}
		break
	}
	return l.route.Domain(tenantName(q.Tenant), q.App, p.Sum())
}

// reason is what the route reason says of the domain's prior: its shift
// of the score, when it has one.
func (l *learning) reason(shift float64) string {
	switch {
	case shift > 0:
		return "; domain prior +" + strconv.FormatFloat(shift, 'f', 2, 64)
	case shift < 0:
		return "; domain prior " + strconv.FormatFloat(shift, 'f', 2, 64)
	}
	return ""
}
