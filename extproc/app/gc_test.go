package app

import (
	"runtime/debug"
	"testing"
)

// current reads the collector's settings without changing them.
func current() (gcPercent int, limit int64) {
	gcPercent = debug.SetGCPercent(100)
	debug.SetGCPercent(gcPercent)
	return gcPercent, debug.SetMemoryLimit(-1)
}

func TestMemoryTuning(t *testing.T) {
	gc, limit := current()
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
	c, err := parseFlags(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		env       map[string]string
		m         memory
		wantGC    int
		wantLimit int64
	}{
		{name: "defaults", m: c.memory, wantGC: defaultGCPercent, wantLimit: defaultMemoryLimit},
		{name: "flags", m: memory{gcPercent: 250, limit: 1 << 30}, wantGC: 250, wantLimit: 1 << 30},
		// The environment is the runtime's to read at start; tune leaves
		// what it set alone.
		{name: "GOGC and GOMEMLIMIT win", env: map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB"}, m: memory{gcPercent: 250, limit: 1 << 20}, wantGC: 150, wantLimit: 77 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(150)
			debug.SetMemoryLimit(77 << 20)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tc.m.tune()
			if gc, limit := current(); gc != tc.wantGC || limit != tc.wantLimit {
				t.Errorf("GOGC %d, memory limit %d; want %d and %d", gc, limit, tc.wantGC, tc.wantLimit)
			}
		})
	}
}
