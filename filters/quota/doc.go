// Package quota is the filter that holds each caller to its rate limits and
// USD budgets, and keeps the gateway within each provider's own limits.
//
// Before a request goes out it takes a token from the caller's buckets
// (tenant, app, key), counts it in the requests- and tokens-per-minute
// windows, reserves the worst-case cost of the router's plan on every
// budget line that applies (tenant, app and key, daily and monthly), and
// moves targets whose provider is at its own limit out of the plan. When the
// answer is complete it commits the actual cost and gives back the rest; a
// failed, refused or cancelled request gives back everything. Every limit
// lives in the shared store, so replicas enforce them together; admitting
// a request is one store call, and so is settling it (one Redis round trip
// each).
//
// Its request-headers hook is the cost governor: it reads how much of the
// tenant's daily budget is spent and tells the router (Exchange.Pressure)
// to favour or keep to cheap models. See README.md and docs/BUDGETS.md.
package quota
