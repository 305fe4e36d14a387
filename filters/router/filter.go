// Package router is the filter that chooses which model and provider serve
// a request, and in which order the providers are tried.
package router

import (
	"context"
	"net/http"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/openai"
)

func init() { filters.Register("router", New) }

// Filter chooses the plan of targets for a request.
type Filter struct{}

// New builds the router filter.
func New(ref policy.FilterRef, _ filters.Deps) (filters.Filter, error) {
	if err := filters.NoArgs(ref); err != nil {
		return nil, err
	}
	return &Filter{}, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "router" }

// RequestBody implements [filters.RequestBodyHook].
func (*Filter) RequestBody(_ context.Context, x *filters.Exchange) error {
	if x.Chat == nil {
		return nil
	}
	name := x.Chat.Model
	m := x.Policy.Model(name)
	if m == nil || !m.Caps.Has(policy.CapChat) {
		return filters.Reject(http.StatusNotFound, openai.TypeInvalidRequest, "model_not_found",
			"the model '%s' does not exist or you do not have access to it", name).WithParam("model")
	}
	if x.Caller.Key != nil && !x.Caller.Key.Allows(name) {
		return filters.Reject(http.StatusForbidden, openai.TypePermission, "model_not_allowed",
			"your key may not use the model '%s'", name).WithParam("model")
	}
	x.Plan = []filters.Target{{Model: m}}
	x.RouteReason = "explicit model"
	return nil
}

var _ filters.RequestBodyHook = (*Filter)(nil)
