// Package catalog is the filter that answers GET /v1/models with the models
// the caller's key may use, in OpenAI list form, without calling a provider.
package catalog

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/openai"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

func init() { filters.Register("catalog", New) }

// Filter serves the model catalog.
type Filter struct {
	created int64
}

// New builds the catalog filter.
func New(ref policy.FilterRef, _ filters.Deps) (filters.Filter, error) {
	if err := policy.NoArgs(ref); err != nil {
		return nil, err
	}
	return &Filter{created: 1704067200}, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "catalog" }

// Uses implements [filters.Declarer].
func (*Filter) Uses() []filters.Use {
	return []filters.Use{filters.Needs(filters.PhaseRequestHeaders, filters.FieldCaller)}
}

// RequestHeaders implements [filters.RequestHeadersHook].
func (f *Filter) RequestHeaders(_ context.Context, x *filters.Exchange) error {
	if x.Method != http.MethodGet {
		return filters.Reject(http.StatusMethodNotAllowed, openai.TypeInvalidRequest, "method_not_allowed", "use GET on %s", x.Route.Path)
	}
	one := strings.TrimPrefix(x.Path, x.Route.Path+"/")
	list := openai.ModelList{Object: "list", Data: []openai.Model{}}
	for _, m := range x.Policy.Models {
		if x.Caller.Key != nil && !x.Caller.Key.Allows(m.Name) {
			continue
		}
		entry := openai.Model{ID: m.Name, Object: "model", Created: f.created, OwnedBy: m.Provider.Name}
		if one != x.Path && one == m.Name {
			body, _ := json.Marshal(entry)
			x.Respond(http.StatusOK, body)
			return nil
		}
		list.Data = append(list.Data, entry)
	}
	if one != x.Path {
		return filters.Reject(http.StatusNotFound, openai.TypeInvalidRequest, "model_not_found",
			"the model '%s' does not exist or you do not have access to it", one)
	}
	body, _ := json.Marshal(list)
	x.Respond(http.StatusOK, body)
	return nil
}

var _ filters.RequestHeadersHook = (*Filter)(nil)
