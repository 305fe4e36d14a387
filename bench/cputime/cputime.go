// Package cputime reads the CPU time a process has used, for Go
// benchmarks run on a shared machine: their ns/op is wall time, which a
// busy machine stretches, while the CPU time an operation costs is not
// (reported as cpu-ns/op).
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time this process has used, user and system, on
// every thread (the garbage collector's included).
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
