package cputime

import (
	"testing"
	"time"
)

// TestProcessCountsWork: busy work shows as CPU time, however busy the
// machine (it only takes longer), and a sleep does not.
func TestProcessCountsWork(t *testing.T) {
	before := Process()
	deadline := time.Now().Add(10 * time.Second)
	for Process()-before < 20*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("10 s of busy work counted %v of CPU time", Process()-before)
		}
	}
	before = Process()
	time.Sleep(100 * time.Millisecond)
	if idle := Process() - before; idle > 20*time.Millisecond {
		t.Errorf("a 100 ms sleep counted %v of CPU time", idle)
	}
}
