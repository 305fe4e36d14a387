// Package harness starts the real Switchyard stack for end-to-end tests and
// for `make run`: the provider simulators (in process), a real redis-server,
// the xds control plane, one or more ext_proc servers and real Envoys, each
// a separate process with its output kept in a log file.
//
// Nothing here is faked: the binaries are the ones users run, Envoy is the
// pinned release, and the policy is a copy of configs/local rewritten only
// to point at the simulators and free ports.
package harness
