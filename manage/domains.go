package manage

import (
	"context"
	"errors"
	"net/http"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/state/priors"
)

// Domains lists what the routes that learn domain priors know of a
// tenant's domains ("" for every tenant) on route ("" for every learning
// route), busiest first.
func Domains(l *priors.Learner, route, tenant string) ([]priors.DomainReport, error) {
	if l == nil {
		return nil, noLearning()
	}
	return l.Report(route, tenant), nil
}

// ResetDomain forgets what route learnt of a tenant's domain (its app and
// the fingerprint of its system prompt, 16 hex digits): on every replica
// it is routed again by the prior, and learns again from there.
func ResetDomain(ctx context.Context, l *priors.Learner, route, tenant, app, domain string) error {
	if l == nil {
		return noLearning()
	}
	if tenant == "" {
		return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_domain",
			"name the domain's tenant").WithParam("tenant")
	}
	k, err := priors.ParseKey(app, domain)
	if err != nil {
		return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_domain",
			"%q is not a domain: %v", domain, err).WithParam("domain")
	}
	switch err := l.Reset(ctx, route, tenant, k); {
	case errors.Is(err, priors.ErrNotLearning):
		return openaiapi.Errorf(http.StatusNotFound, openaiapi.TypeInvalidRequest, "route_not_learning",
			"the route %q does not learn domain priors", route).WithParam("route")
	case err != nil:
		return openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServer, "store_unavailable",
			"the reset could not be shared with the other replicas: the store is unavailable")
	}
	return nil
}

func noLearning() error {
	return openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServer, "learning_unavailable", "this gateway learns no domain priors")
}
