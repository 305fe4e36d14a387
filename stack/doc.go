// Package stack starts the real Switchyard stack as processes: the provider
// simulators (in process), a real redis-server, the xds control plane, one
// or more ext_proc servers (or the node running both) and real Envoys, each
// with its output kept in a log file. `make run` (cmd/devstack) and the
// end-to-end suite both start it, so the tests run what users run.
//
// Nothing here is faked: the binaries are the ones users run, Envoy is the
// pinned release, and the policy is a copy of the chosen directory
// rewritten only to point at the simulators and the ports picked.
package stack
