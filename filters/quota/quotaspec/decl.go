package quotaspec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the quota filter.
var Decl = filterspec.Decl{
	Name: "quota",
	// Order: after router, a budget reservation prices the plan the router
	// chose; on a route that reaches no model (feedback) quota holds each
	// request to the caller's rate limits alone.
	Order: 300,
	// The governor's verdict flows forward from quota's request headers
	// to the router's body hook; the router's plan comes back to quota's
	// body hook, which may cut it to fit the budget and the providers'
	// limits. A route without a router (a rating) has no plan: its
	// requests are held to rate limits alone.
	Uses: []filterspec.Use{
		filterspec.Needs(filterspec.PhaseRequestHeaders, filterspec.FieldCaller),
		filterspec.Provides(filterspec.PhaseRequestHeaders, filterspec.FieldPressure),
		filterspec.Needs(filterspec.PhaseRequestBody, filterspec.FieldCaller),
		filterspec.Reads(filterspec.PhaseRequestBody, filterspec.FieldLabels),
		filterspec.Reads(filterspec.PhaseRequestBody, filterspec.FieldPlan),
		filterspec.Provides(filterspec.PhaseRequestBody, filterspec.FieldPlan),
		filterspec.Provides(filterspec.PhaseRequestBody, filterspec.FieldRouting),
		filterspec.Reads(filterspec.PhaseDone, filterspec.FieldUsage),
	},
	Args: []filterspec.Arg{
		{Name: "reservation_ttl", Type: "duration", Default: "15m", Meaning: "how long a budget reservation outlives a replica that crashed holding it (1m to 24h)"},
		{Name: "store_timeout", Type: "duration", Default: "1s", Meaning: "bound of each store call on the request path (1ms to 1m)"},
		{Name: "budget_refresh", Type: "duration", Default: "1s", Meaning: "how old the cost governor's view of a tenant's budget may be (at most 1m)"},
	},
	Check: filterspec.Parsed(Parse),
}
