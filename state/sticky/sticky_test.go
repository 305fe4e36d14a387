package sticky

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestStickinessIsPerTenant: one tenant's request must not pin another
// tenant's user of the same name.
func TestStickinessIsPerTenant(t *testing.T) {
	t.Parallel()
	s := New(10, time.Now)
	s.Set("chat", "a", "u1", "mid", time.Minute)
	if m, ok := s.Get("chat", "a", "u1"); !ok || m != "mid" {
		t.Errorf("tenant a's own user: got %q, %v", m, ok)
	}
	if m, ok := s.Get("chat", "b", "u1"); ok {
		t.Errorf("tenant b's user u1 is pinned to %q by tenant a", m)
	}
	if _, ok := s.Get("other", "a", "u1"); ok {
		t.Error("stickiness leaked to another route")
	}
}

// TestStickyIsBounded: the store holds at most its size whatever the
// number of users, and an oversized user identifier is not kept at all.
func TestStickyIsBounded(t *testing.T) {
	t.Parallel()
	s := New(10, time.Now)
	for i := range 1000 {
		s.Set("chat", "a", fmt.Sprint("user-", i), "mid", time.Minute)
	}
	if n := s.Len(); n != 10 {
		t.Errorf("the store holds %d users, want its size 10", n)
	}
	if _, ok := s.Get("chat", "a", "user-999"); !ok {
		t.Error("the most recent user was evicted")
	}
	long := strings.Repeat("x", MaxUser+1)
	s = New(10, time.Now)
	s.Set("chat", "a", long, "mid", time.Minute)
	if _, ok := s.Get("chat", "a", long); ok || s.Len() != 0 {
		t.Errorf("a %d-byte user identifier was stored", len(long))
	}
}
