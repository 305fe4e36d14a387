// Package store holds the state that gateway replicas must agree on: rate
// limits, USD budgets with reservations, runtime virtual keys and provider
// health.
//
// One [Store] interface has two implementations. [Redis] shares state between
// replicas; every check-and-update is one Lua script, so it is atomic, and all
// keys a script touches share one hash tag, so it also runs on Redis Cluster.
// [Memory] is the embedded single-node default with the same semantics,
// guarded by a mutex and driven by an injected [Clock].
//
// [Requests] groups the calls one request makes: [Requests.Admit] takes
// its buckets, windows and reservation, and [Requests.Settle] commits or
// releases it and corrects its windows, each in one Redis round trip, with
// the semantics of the separate calls.
//
// Money is integer micro-USD (1 USD = 1_000_000). Budget periods are UTC days
// and months. When Redis cannot be reached every call returns an error that
// matches [ErrUnavailable], so the caller can fail open or closed per limit;
// a [Spooler] keeps commits that could not be written and replays them later.
//
// README.md in this directory documents the Redis key layout, the contract of
// each script and a worked example.
package store
