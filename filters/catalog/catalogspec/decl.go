package catalogspec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the catalog filter.
var Decl = filterspec.Decl{
	Name:  "catalog",
	Order: 150,
	Uses: []filterspec.Use{
		filterspec.Needs(filterspec.PhaseRequestHeaders, filterspec.FieldCaller),
	},
}
