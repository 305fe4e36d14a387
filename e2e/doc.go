// Package e2e holds Switchyard's end-to-end tests. They run the real
// gateway (Envoy, the xds control plane, ext_proc, redis-server) against the
// provider simulators and drive it with the official OpenAI Go SDK, as a
// user would. They never skip: a missing Envoy or Redis fails them with
// install instructions. `go test -short` leaves them out.
package e2e
