// Package catalog is the filter that answers GET /v1/models with the models
// the caller's key may use, without calling a provider: in OpenAI list
// form, or in Anthropic's for a client that sends anthropic-version (the
// Anthropic SDKs, Claude Code), each the shape its SDK pages through.
//
// The list holds the policy's models, its aliases and the catalog's
// models its patterns serve; a field the SDKs ignore, patterns, says
// which patterns are open (serve names the catalog does not know).
package catalog

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
)

func init() { filters.Register("catalog", New) }

// Filter serves the model catalog.
type Filter struct {
	created int64
}

// New builds the catalog filter.
func New(ref policy.FilterRef, _ filters.Deps) (filters.Filter, error) {
	if err := filterspec.NoArgs(ref); err != nil {
		return nil, err
	}
	return &Filter{created: 1704067200}, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "catalog" }

// listing is one model of the list: the id clients send, and what serves
// it (nil for an alias of auto).
type listing struct {
	id      string
	model   *policy.Model
	aliasOf string
}

// Pattern is how the list says what a pattern serves.
type Pattern struct {
	Match    string `json:"match"`
	Provider string `json:"provider"`
	// Open is set when the pattern serves names the catalog does not
	// know, at the price Unpriced says; a closed one serves the catalog's
	// models only.
	Open     bool   `json:"open"`
	Unpriced string `json:"unpriced"`
}

// openaiModel is a model in OpenAI's shape, with what the gateway adds.
type openaiModel struct {
	openaiapi.Model
	AliasOf string `json:"alias_of,omitempty"`
	Pattern string `json:"pattern,omitempty"`
}

type openaiList struct {
	Object   string        `json:"object"`
	Data     []openaiModel `json:"data"`
	Patterns []Pattern     `json:"patterns"`
}

// anthropicModel is a model in Anthropic's shape, with what the gateway
// adds.
type anthropicModel struct {
	anthropicapi.Model
	AliasOf string `json:"alias_of,omitempty"`
	Pattern string `json:"pattern,omitempty"`
}

type anthropicList struct {
	Data     []anthropicModel `json:"data"`
	HasMore  bool             `json:"has_more"`
	FirstID  *string          `json:"first_id"`
	LastID   *string          `json:"last_id"`
	Patterns []Pattern        `json:"patterns"`
}

// RequestHeaders implements [filters.RequestHeadersHook].
func (f *Filter) RequestHeaders(_ context.Context, x *filters.Exchange) error {
	if x.Method != http.MethodGet {
		return filters.Reject(http.StatusMethodNotAllowed, openaiapi.TypeInvalidRequest, "method_not_allowed", "use GET on %s", x.Route.Path)
	}
	if one := strings.TrimPrefix(x.Path, x.Route.Path+"/"); one != x.Path {
		l, ok := f.one(x, one)
		if !ok {
			return filters.Reject(http.StatusNotFound, openaiapi.TypeInvalidRequest, "model_not_found",
				"the model '%s' does not exist or you do not have access to it", one)
		}
		x.Respond(http.StatusOK, f.entry(x, l))
		return nil
	}
	x.Respond(http.StatusOK, f.list(x, f.listings(x)))
	return nil
}

// may reports whether the caller may use what l names.
func may(x *filters.Exchange, l listing) bool {
	if l.model == nil {
		return true
	}
	alias := ""
	if l.aliasOf != "" {
		alias = l.id
	}
	return policy.MayServe(x.Caller.Key, x.Caller.Tenant, l.model, alias)
}

// one is the listing of a name a client asks about: whatever the gateway
// would serve it with.
func (f *Filter) one(x *filters.Exchange, id string) (listing, bool) {
	res := x.Policy.Resolve(id)
	l := listing{id: id, model: res.Model}
	switch {
	case res.Auto:
		l.aliasOf = policy.AliasAuto
	case res.Model == nil:
		return l, false
	case res.Alias != "":
		l.aliasOf = res.Model.Name
	}
	return l, may(x, l)
}

// listings are the models the caller may use: the policy's, its aliases,
// then the catalog's its patterns serve, each id once.
func (f *Filter) listings(x *filters.Exchange) []listing {
	var out []listing
	seen := map[string]bool{}
	add := func(l listing) {
		if !seen[l.id] && may(x, l) {
			seen[l.id] = true
			out = append(out, l)
		}
	}
	for _, m := range x.Policy.Models {
		add(listing{id: m.Name, model: m})
	}
	aliases := x.Policy.Aliases()
	for _, name := range slices.Sorted(maps.Keys(aliases)) {
		if l, ok := f.one(x, name); ok {
			add(l)
		}
	}
	for _, pt := range x.Policy.Patterns {
		for _, m := range pt.Known() {
			// An earlier pattern matching the name decides it.
			if x.Policy.Resolve(m.Name).Model == m {
				add(listing{id: m.Name, model: m})
			}
		}
	}
	return out
}

// patterns are the patterns the caller may use.
func patterns(x *filters.Exchange) []Pattern {
	out := []Pattern{}
	for _, pt := range x.Policy.Patterns {
		if policy.MayServe(x.Caller.Key, x.Caller.Tenant, &policy.Model{Pattern: pt}, "") {
			out = append(out, Pattern{Match: pt.Match, Provider: pt.Provider.Name, Open: pt.Open(), Unpriced: string(pt.Unpriced)})
		}
	}
	return out
}

func (f *Filter) openai(l listing) openaiModel {
	m := openaiModel{Model: openaiapi.Model{ID: l.id, Object: "model", Created: f.created, OwnedBy: owner(l)}, AliasOf: l.aliasOf}
	if l.model != nil && l.model.Pattern != nil {
		m.Pattern = l.model.Pattern.Match
	}
	return m
}

func (f *Filter) anthropic(l listing) anthropicModel {
	o := f.openai(l)
	return anthropicModel{
		Model:   anthropicapi.Model{ID: l.id, Type: "model", DisplayName: l.id, CreatedAt: time.Unix(f.created, 0).UTC().Format(time.RFC3339)},
		AliasOf: o.AliasOf, Pattern: o.Pattern,
	}
}

// owner is the provider that serves a listing; the gateway itself
// chooses for an alias of auto.
func owner(l listing) string {
	if l.model == nil {
		return "switchyard"
	}
	return l.model.Provider.Name
}

// entry is one model in the client's shape.
func (f *Filter) entry(x *filters.Exchange, l listing) []byte {
	var v any = f.openai(l)
	if x.SpeaksAnthropic() {
		v = f.anthropic(l)
	}
	body, _ := json.Marshal(v)
	return body
}

// list is the model list in the client's shape: Anthropic's is a page
// (has_more, first_id, last_id), which its SDKs follow.
func (f *Filter) list(x *filters.Exchange, ls []listing) []byte {
	var v any
	if x.SpeaksAnthropic() {
		l := anthropicList{Data: []anthropicModel{}, Patterns: patterns(x)}
		for _, m := range ls {
			l.Data = append(l.Data, f.anthropic(m))
		}
		if n := len(l.Data); n > 0 {
			l.FirstID, l.LastID = &l.Data[0].ID, &l.Data[n-1].ID
		}
		v = l
	} else {
		l := openaiList{Object: "list", Data: []openaiModel{}, Patterns: patterns(x)}
		for _, m := range ls {
			l.Data = append(l.Data, f.openai(m))
		}
		v = l
	}
	body, _ := json.Marshal(v)
	return body
}

var _ filters.RequestHeadersHook = (*Filter)(nil)
