// Package lease keeps the shared store off the request path. A [Store]
// wraps a [store.Store] (Redis) and answers [store.Requests.Admit] and
// [store.Requests.Settle] from leases it holds locally: a slice of a
// bucket's tokens, of a window's counts and of a set of budget lines'
// remaining micro-USD, each taken from the shared store in the background
// with the store's own atomic calls, so what one replica holds no other
// replica can take.
//
// A budget lease is a reservation in the store. Requests reserve inside it
// and their actual costs add up in it; the lease is committed with that
// sum once it is closed (after MaxAge, when idle, or when it is too small
// for a request) and its requests have settled. Each request's share of a
// lease is at most its worst case and a lease never lends more than it
// holds, so committed spend stays within the budget exactly as with
// per-request reservations. Leases are sized to a share of what is left
// (Options.Share) and to recent demand; when that is less than a few
// requests' worth (Options.MinRequests) no lease is taken and each request
// is admitted by the store, as it would be without this package.
//
// Bucket tokens and window counts taken by a lease are counted in the
// store at once; a replica spends them until they go unused for Idle (a
// bucket's tokens) or until the window ends. What a lease did not spend is given back to a
// window when it is retired; bucket tokens have nothing to give back to
// and lapse. docs/BUDGETS.md states the bound for each kind of limit.
//
// Window corrections (Settle's deltas) and lease commits are batched and
// written every Tick and on [Store.Close].
package lease
