package server

import (
	"strings"
	"testing"
)

// TestPhasePoolRaisesPanicsAgain: a phase's panic reaches the stream's
// goroutine, which recovers it, with the stack where it was raised.
func TestPhasePoolRaisesPanicsAgain(t *testing.T) {
	p := newPhasePool()
	for range 3 { // the pool's goroutine goes on serving after a panic
		got := func() (r any) {
			defer func() { r = recover() }()
			p.run(func() { panicInAPhase() })
			return nil
		}()
		pp, ok := got.(phasePanic)
		if !ok || pp.value != "boom" || !strings.Contains(string(pp.stack), "panicInAPhase") {
			t.Fatalf("recovered %#v; want the phase's panic with its stack", got)
		}
	}
	ran := false
	p.run(func() { ran = true })
	if !ran {
		t.Fatal("run returned before its call ran")
	}
}

func panicInAPhase() { panic("boom") }

// BenchmarkPhasePool is what running a phase off the stream's goroutine
// costs: a hand-off there and back.
func BenchmarkPhasePool(b *testing.B) {
	p := newPhasePool()
	n := 0
	for b.Loop() {
		p.run(func() { n++ })
	}
}
