package stack

import (
	"net"
	"strconv"
	"testing"
)

// TestPickStaysBelowTheEphemeralRange: the ports picked for processes that
// bind them later are free, never handed out twice, and below the range
// the kernel takes outgoing connections' ports from, so no connection of
// a parallel test can take one meanwhile.
func TestPickStaysBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p := pick(0)
		if p < pickFloor || p >= low {
			t.Fatalf("picked %d, want a port in [%d, %d)", p, pickFloor, low)
		}
		if seen[p] {
			t.Fatalf("port %d picked twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("picked port %d is not free: %v", p, err)
		}
		l.Close()
	}
	if got := pick(8080); got != 8080 {
		t.Errorf("pick(8080) = %d, want the port asked for", got)
	}
}
