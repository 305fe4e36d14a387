package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/ledger"
)

// The tenant and app configs/local binds the demo key to.
const (
	demoKey    = "sk-local-demo"
	demoTenant = "demo"
	demoApp    = "demo"
)

// account checks the gateway's record of one run against what the client
// did: every request on a route that reaches a model is a ledger row of
// the demo tenant and app, of a route of the client's API, answered 200
// by the provider the policy gives the model that served it, and priced
// (a token count is free); a model the run named is the one that served,
// not a fallback; and no row is of a request the access log never saw.
// It returns how many of the requests are rows, and what is wrong.
func account(p *policy.Policy, api policy.API, model string, lines []accessLine, rows map[string]ledger.Record) (matched int, problems []string) {
	add := func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !slices.Contains(problems, msg) {
			problems = append(problems, msg)
		}
	}
	logged := map[string]bool{}
	for _, l := range lines {
		logged[l.RequestID] = true
		r, ok := rows[l.RequestID]
		route := routeNamed(p, l.Switchyard.Route)
		switch {
		case ok:
			matched++
		case route != nil && route.API.Models():
			add("%s %s has no ledger row", l.Method, l.Path)
			continue
		default:
			continue // a model list, say: no row
		}
		if l.Status != 200 {
			add("%s %s answered %d %s", l.Method, l.Path, l.Status, l.Details)
		}
		if r.Tenant != demoTenant || r.App != demoApp {
			add("row of tenant %q app %q, want %s/%s", r.Tenant, r.App, demoTenant, demoApp)
		}
		if route == nil || route.API != api && !(api == policy.APIMessages && route.API == policy.APICountTokens) {
			add("row of route %q, not one of the %s API", r.Route, api)
		}
		if l.Status != 200 {
			continue
		}
		if m := modelNamed(p, r.ServedModel); m == nil || m.Provider.Name != r.Provider {
			add("served by %q on provider %q, which the policy does not pair", r.ServedModel, r.Provider)
		}
		if model != "" && r.RequestedModel == model && r.ServedModel != model {
			add("%s was served by %s", model, r.ServedModel)
		}
		if r.CostMicros <= 0 && route.API != policy.APICountTokens {
			add("a served %s row costs nothing", r.Route)
		}
	}
	for id, r := range rows {
		if !logged[id] {
			add("ledger row %s (%s) of no request of this run", id, r.Route)
		}
	}
	return matched, problems
}

func routeNamed(p *policy.Policy, name string) *policy.Route {
	for _, r := range p.Routes {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// modelNamed is the model a name stands for in p: one of its own, or
// one a pattern serves from the catalog (the agents' default models).
func modelNamed(p *policy.Policy, name string) *policy.Model {
	for _, m := range p.Models {
		if m.Name == name {
			return m
		}
	}
	return p.Resolve(name).Model
}

// target is how the matrix names the model of a run: its provider kind
// and name, or, run with the client's default, the models the client
// asked for.
func target(p *policy.Policy, model string, rows map[string]ledger.Record) string {
	if m := modelNamed(p, model); m != nil {
		return string(m.Provider.Kind) + " / " + model
	}
	if model != "" {
		return "? / " + model
	}
	var asked []string
	for _, r := range rows {
		if r.RequestedModel != "" && !slices.Contains(asked, r.RequestedModel) {
			asked = append(asked, r.RequestedModel)
		}
	}
	slices.Sort(asked)
	if len(asked) == 0 {
		return "default model"
	}
	return "default model (" + strings.Join(asked, ", ") + ")"
}
