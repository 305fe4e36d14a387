package authspec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the auth filter.
var Decl = filterspec.Decl{
	Name:  "auth",
	Order: 100,
	Uses: []filterspec.Use{
		filterspec.Provides(filterspec.PhaseRequestHeaders, filterspec.FieldCaller),
		filterspec.Provides(filterspec.PhaseRequestHeaders, filterspec.FieldLabels),
	},
}
