package translatespec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the translate filter.
var Decl = filterspec.Decl{
	Name:  "translate",
	Order: 400,
	// Translate keeps what the client was sent and, at the end, prices
	// the answer from it and the provider's count.
	Uses: []filterspec.Use{
		filterspec.Provides(filterspec.PhaseRequestBody, filterspec.FieldRedaction),
		filterspec.Needs(filterspec.PhaseAttempt, filterspec.FieldPlan),
		filterspec.Provides(filterspec.PhaseResponseBody, filterspec.FieldSent),
		filterspec.Needs(filterspec.PhaseDone, filterspec.FieldSent),
		filterspec.Provides(filterspec.PhaseDone, filterspec.FieldUsage),
		filterspec.Reads(filterspec.PhaseDone, filterspec.FieldCached),
	},
	Requires: []filterspec.Requirement{
		{Filter: "usage", Why: "every request that reaches a provider is a ledger row, whatever the route (a token count included)"},
	},
}
