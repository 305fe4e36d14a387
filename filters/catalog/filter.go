// Package catalog is the filter that answers GET /v1/models with the models
// the caller's key may use, without calling a provider: in OpenAI list
// form, or in Anthropic's for a client that sends anthropic-version (the
// Anthropic SDKs, Claude Code), each the shape its SDK pages through.
package catalog

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/anthropic"
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
	var models []*policy.Model
	for _, m := range x.Policy.Models {
		if x.Caller.Key != nil && !x.Caller.Key.Allows(m.Name) {
			continue
		}
		if one != x.Path && one == m.Name {
			x.Respond(http.StatusOK, f.entry(x, m))
			return nil
		}
		models = append(models, m)
	}
	if one != x.Path {
		return filters.Reject(http.StatusNotFound, openai.TypeInvalidRequest, "model_not_found",
			"the model '%s' does not exist or you do not have access to it", one)
	}
	x.Respond(http.StatusOK, f.list(x, models))
	return nil
}

// entry is one model in the client's shape.
func (f *Filter) entry(x *filters.Exchange, m *policy.Model) []byte {
	var v any = openai.Model{ID: m.Name, Object: "model", Created: f.created, OwnedBy: m.Provider.Name}
	if x.SpeaksAnthropic() {
		v = f.anthropic(m)
	}
	body, _ := json.Marshal(v)
	return body
}

// list is the model list in the client's shape: Anthropic's is a page
// (has_more, first_id, last_id), which its SDKs follow.
func (f *Filter) list(x *filters.Exchange, models []*policy.Model) []byte {
	var v any
	if x.SpeaksAnthropic() {
		l := anthropic.ModelList{Data: []anthropic.Model{}}
		for _, m := range models {
			l.Data = append(l.Data, f.anthropic(m))
		}
		if n := len(l.Data); n > 0 {
			l.FirstID, l.LastID = &l.Data[0].ID, &l.Data[n-1].ID
		}
		v = l
	} else {
		l := openai.ModelList{Object: "list", Data: []openai.Model{}}
		for _, m := range models {
			l.Data = append(l.Data, openai.Model{ID: m.Name, Object: "model", Created: f.created, OwnedBy: m.Provider.Name})
		}
		v = l
	}
	body, _ := json.Marshal(v)
	return body
}

func (f *Filter) anthropic(m *policy.Model) anthropic.Model {
	return anthropic.Model{ID: m.Name, Type: "model", DisplayName: m.Name, CreatedAt: time.Unix(f.created, 0).UTC().Format(time.RFC3339)}
}

var _ filters.RequestHeadersHook = (*Filter)(nil)
