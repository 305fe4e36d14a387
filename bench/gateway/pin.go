package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinning says which CPUs the measured paths run on and which the client
// and simulator (this process) run on.
type pinning struct {
	paths, client string
}

func (p pinning) describe() string {
	if p.paths == "" {
		return "not pinned (fewer than two CPUs)"
	}
	return fmt.Sprintf("each path's processes on CPU %s, the client and the simulator on CPU %s", p.paths, p.client)
}

// pinSelf moves every thread of this process (the client and the in-process
// simulator) to the last CPU and leaves CPU 0 to the path being measured,
// so each path has one core of its own. With one CPU nothing is pinned.
func pinSelf() (pinning, error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return pinning{}, err
	}
	if all.Count() < 2 || !all.IsSet(0) {
		return pinning{}, nil
	}
	last := 0
	for c := range runtime.NumCPU() * 4 {
		if all.IsSet(c) {
			last = c
		}
	}
	var set unix.CPUSet
	set.Set(last)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return pinning{}, err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return pinning{}, fmt.Errorf("pinning thread %d: %w", tid, err)
		}
	}
	return pinning{paths: "0", client: strconv.Itoa(last)}, nil
}
