package cachespec

import "github.com/switchyard/switchyard/filters/filterspec"

// Decl declares the cache filter.
var Decl = filterspec.Decl{
	Name: "cache",
	// Order: after quota, so a hit is still held to the caller's rate
	// limits (its budget reservation commits nothing), and inside usage, so
	// usage records a hit or a degraded answer the cache made.
	Order: 320,
	// A hit or a degraded answer is the request's usage (at no cost) and
	// its Cached mark, for usage's record.
	Uses: []filterspec.Use{
		filterspec.Needs(filterspec.PhaseRequestBody, filterspec.FieldCaller),
		filterspec.Provides(filterspec.PhaseRequestBody, filterspec.FieldUsage),
		filterspec.Provides(filterspec.PhaseRequestBody, filterspec.FieldCached),
		filterspec.Provides(filterspec.PhaseResponseBody, filterspec.FieldUsage),
		filterspec.Provides(filterspec.PhaseResponseBody, filterspec.FieldCached),
	},
	Requires: []filterspec.Requirement{
		{Filter: "router", Why: "a cached answer is the answer of the model the router resolved"},
		{Filter: "translate", Why: "answers are kept in the OpenAI form translate gives them"},
		{Filter: "usage", Why: "a hit or a degraded answer is recorded like any answer"},
	},
	Args: []filterspec.Arg{
		{Name: "ttl", Type: "duration", Default: "5m", Meaning: "how long an answer is served from the shared cache (1s to 24h)"},
		{Name: "memory_ttl", Type: "duration", Default: "15s", Meaning: "how long a replica serves an answer from its own memory (at most ttl)"},
		{Name: "stale_for", Type: "duration", Default: "1h", Meaning: "how long past ttl an answer is kept for degraded mode; 0 turns it off"},
		{Name: "deterministic_only", Type: "bool", Default: "true", Meaning: "cache only temperature 0, or requests that ask with x-switchyard-cache: on"},
		{Name: "max_memory", Type: "size", Default: "64MiB", Meaning: "answers a replica keeps in memory for the route (1MiB to 16GiB)"},
		{Name: "tenants", Type: "list of tenants", Default: "every tenant", Meaning: "the tenants whose answers are cached"},
	},
	Check: filterspec.Parsed(Parse),
}
