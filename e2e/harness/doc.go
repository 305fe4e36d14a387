// Package harness holds what only the end-to-end tests need beside the
// stack they start (package stack): a trace collector whose spans they
// read, and reads of a process's Prometheus metrics.
package harness
