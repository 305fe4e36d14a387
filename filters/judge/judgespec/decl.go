package judgespec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the judge filter.
var Decl = filterspec.Decl{
	Name: "judge",
	// Order: inside translate, so its response hook reads the answer in
	// OpenAI's format whatever the provider spoke.
	Order: 360,
	Uses: []filterspec.Use{
		filterspec.Reads(filterspec.PhaseDone, filterspec.FieldSent),
		filterspec.Reads(filterspec.PhaseDone, filterspec.FieldCached),
	},
	Requires: []filterspec.Requirement{
		{Filter: "auth", Why: "its calls are charged to a tenant"},
		{Filter: "router", Why: "it grades the answers auto routing had a weaker model give"},
		{Filter: "translate", Why: "it reads the answer in OpenAI's format whatever the provider spoke"},
	},
	Args: []filterspec.Arg{
		{Name: "model", Type: "chat model", Default: "required", Meaning: "the model that grades"},
		{Name: "reference", Type: "chat model", Default: "the strongest chat model", Meaning: "the model whose answer is the reference"},
		{Name: "weak", Type: "chat model", Default: "the cheapest chat model", Meaning: "on a route that learns, the model whose answer is graded against the reference's when the reference served"},
		{Name: "sample", Type: "share", Default: "0.05", Meaning: "share of eligible answers graded, (0, 1]"},
		{Name: "max_per_minute", Type: "int", Default: "10", Meaning: "gradings a replica runs a minute (1 to 600)"},
		{Name: "api_key", Type: "secret ({env} or {file})", Default: "required", Meaning: "the virtual key the judge's calls go through the gateway with"},
		{Name: "gateway_url", Type: "URL", Default: "the policy's listener on loopback", Meaning: "where the judge's calls go"},
	},
	Check: filterspec.Parsed(Parse),
}
