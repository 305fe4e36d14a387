// Package cache is the response cache filter: an exact-match cache of
// chat completions per tenant (the key is the tenant, the route and the
// normalized request: model, messages, tools and sampling parameters), in
// a replica's memory for memory_ttl (15 s) and in Redis for ttl (5 min).
//
// On the request side a fresh answer is served at once, as the router-level
// ext_proc's immediate response (no provider, no budget spent), as JSON or,
// for a streamed request, as SSE; X-Switchyard-Cache says hit or miss. On the response
// side a complete 200 answer is stored, a streamed one as the completion
// its chunks spell out. When
// every attempt failed (or the router found every provider down), an
// answer up to stale_for past its ttl is served instead of the 503, with
// X-Switchyard-Degraded: true (degraded mode). Hits are ledger rows of the provider
// "cache" at zero cost, saving what their answer cost when it was made.
package cache
