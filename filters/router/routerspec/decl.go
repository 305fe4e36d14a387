package routerspec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the router filter.
var Decl = filterspec.Decl{
	Name:  "router",
	Order: 200,
	Uses: []filterspec.Use{
		filterspec.Needs(filterspec.PhaseRequestBody, filterspec.FieldCaller),
		filterspec.Reads(filterspec.PhaseRequestBody, filterspec.FieldPressure),
		filterspec.Provides(filterspec.PhaseRequestBody, filterspec.FieldPlan),
		filterspec.Provides(filterspec.PhaseRequestBody, filterspec.FieldRouting),
		filterspec.Needs(filterspec.PhaseResponseHeaders, filterspec.FieldRouting),
		filterspec.Needs(filterspec.PhaseResponseBody, filterspec.FieldPlan),
		filterspec.Reads(filterspec.PhaseResponseBody, filterspec.FieldCached),
		filterspec.Reads(filterspec.PhaseDone, filterspec.FieldSent),
	},
}
