package usagereportspec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the usage_report filter.
var Decl = filterspec.Decl{
	Name:  "usage_report",
	Order: 160,
	Uses: []filterspec.Use{
		filterspec.Needs(filterspec.PhaseRequestHeaders, filterspec.FieldCaller),
	},
}
