// Package priors learns, for each domain of a route's traffic, how much
// quality the weak models lose on it, and turns that into a shift of the
// complexity score the router ranks the domain's requests by.
//
// A domain is a tenant's app under one system prompt (its fingerprint:
// the prompt's first kilobyte, digits left out), or the app alone for
// requests without one. Real traffic comes from apps that send the same
// kind of request under the same instructions day after day; a domain's
// verdicts (the judge's grades of weak answers against strong ones, the
// apps' ratings of weak answers) say whether its weak answers hold up.
//
// The estimate is a factor on what the classifier's shipped curve
// expects a weak answer to lose at the request's score (model.go): a
// Gamma posterior whose prior is the shipped calibration, so that a
// domain without evidence routes as before and one with evidence moves
// away from the prior only as far as its verdicts allow. Each domain's
// shift is the log of its factor against its tenant's average, over the
// classifier's slope: the domains trade the route's strong calls among
// themselves, and the route's share (thresholds, or the calibration
// holding an auto route's share) stays what it was.
//
// The request path (Route.Domain, Domain.Shift, Domain.Routed) is map
// lookups and atomics. Off it, Refresh hands each replica's new evidence
// to the store's TallyBoard (decayed sums every replica adds to and that
// outlive them), reads the deployment's back, and recomputes every
// domain. Each tenant's domains are bounded; past the bound the least
// recently seen go, here and on the board.
package priors
