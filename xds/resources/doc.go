// Package resources turns a policy into the Envoy resources the control
// plane serves: the ingress listener and its filters, the route table, and
// one cluster per provider. Every builder is a pure function of the policy,
// so the output is golden-tested and a snapshot built from it is checked
// for consistency before it is served.
//
// The request path it wires, in Envoy terms:
//
//	listener → local token bucket → ext_proc (router level: auth, route
//	choice; sets the provider order as dynamic metadata and clears the
//	route cache) → router, whose priority-group cluster specifier sends
//	attempt n to the n-th provider of that order and whose retries move
//	across provider clusters → per attempt: ext_proc (upstream level:
//	translation and provider key) → upstream codec → provider.
//
// Provider keys never appear here: they live only in ext_proc.
package resources
