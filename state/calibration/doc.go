// Package calibration turns "send at most this share of requests to the
// strong models" into a complexity threshold that holds on the
// deployment's own traffic, whatever its domain.
//
// Each replica keeps, per route and tenant, a quantile sketch (DDSketch)
// of the complexity scores it routed, decayed with the policy's half-life
// so that it follows the traffic. Off the request path, every few seconds
// it publishes its sketches to the shared store, merges every replica's,
// and reads from the merged distribution a quantile table the request
// path looks thresholds up in: one atomic load and an interpolation.
//
// A tenant with too few recent scores uses its route's distribution (all
// tenants merged); a route with too few uses the classifier's shipped
// calibration, under which a score is already a quantile of typical
// traffic.
package calibration
