package usagespec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the usage filter.
var Decl = filterspec.Decl{
	Name: "usage",
	// Order: inside translate, so that usage's Done runs after translate's,
	// which prices the answer (a stream the client cut short included).
	Order: 350,
	Uses: []filterspec.Use{
		filterspec.Needs(filterspec.PhaseDone, filterspec.FieldCaller),
		filterspec.Needs(filterspec.PhaseDone, filterspec.FieldPlan),
		filterspec.Needs(filterspec.PhaseDone, filterspec.FieldRouting),
		filterspec.Needs(filterspec.PhaseDone, filterspec.FieldSent),
		filterspec.Needs(filterspec.PhaseDone, filterspec.FieldUsage),
		filterspec.Reads(filterspec.PhaseDone, filterspec.FieldCached),
		filterspec.Reads(filterspec.PhaseDone, filterspec.FieldLabels),
		filterspec.Reads(filterspec.PhaseDone, filterspec.FieldRedaction),
	},
}
