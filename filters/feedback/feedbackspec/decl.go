package feedbackspec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the feedback filter.
var Decl = filterspec.Decl{
	Name:  "feedback",
	Order: 170,
	Uses: []filterspec.Use{
		filterspec.Needs(filterspec.PhaseRequestHeaders, filterspec.FieldCaller),
		filterspec.Needs(filterspec.PhaseRequestBody, filterspec.FieldCaller),
	},
}
