// Package server is Switchyard's Envoy external-processing gRPC service:
// the only code that touches ext_proc protobufs.
//
// Two kinds of stream arrive. The router-level filter opens one per client
// request: request headers and body run the request side of the route's
// filter chain, which ends by naming the providers to try (as priority-group
// dynamic metadata) and clearing the route cache; response headers and body
// run the response side. The per-attempt (upstream) filter opens one more
// stream for every attempt Envoy makes, marked by the gRPC metadata
// "x-switchyard-phase: upstream"; it finds the request's [filters.Exchange]
// by request ID and returns the request translated for that attempt's
// provider, its only message. How each attempt ended is learnt without
// holding any request: the last attempt's from the answer the router-level
// stream sees, a retried one's from Envoy's router upstream log, which
// Envoy sends to this process's gRPC access-log service ([Server.AttemptLog]).
// Both streams of a request therefore must reach the same process, which is
// why ext_proc runs beside its Envoy. The same access-log service receives
// Envoy's cut log, the requests a timeout of Envoy's ended: once an answer
// has begun, that is the only way to tell a provider's stall from the
// client leaving ([Server.AttemptLog]).
//
// The server fails closed: a request that cannot be translated or whose
// exchange is unknown is answered with an error, never forwarded as is.
package server
