package router

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/filters"
)

// TestStickinessIsPerTenant: one tenant's request must not pin another
// tenant's user of the same name.
func TestStickinessIsPerTenant(t *testing.T) {
	t.Parallel()
	s := NewSticky(10, time.Now)
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
	s := NewSticky(10, time.Now)
	for i := range 1000 {
		s.Set("chat", "a", fmt.Sprint("user-", i), "mid", time.Minute)
	}
	if n := s.Len(); n != 10 {
		t.Errorf("the store holds %d users, want its size 10", n)
	}
	if _, ok := s.Get("chat", "a", "user-999"); !ok {
		t.Error("the most recent user was evicted")
	}
	long := strings.Repeat("x", MaxStickyUser+1)
	s = NewSticky(10, time.Now)
	s.Set("chat", "a", long, "mid", time.Minute)
	if _, ok := s.Get("chat", "a", long); ok || s.Len() != 0 {
		t.Errorf("a %d-byte user identifier was stored", len(long))
	}
}

// TestOnlyServedRequestsStick: a user sticks to a model only after it
// served them whole; a provider's refusal or a cut stream does not pin.
func TestOnlyServedRequestsStick(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		status   int
		complete bool
		want     bool
	}{
		{name: "served", status: 200, complete: true, want: true},
		{name: "provider refused the request", status: 400, complete: true},
		{name: "stream cut short", status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, p := testRouter(t, false, nil)
			p.Routes[0].Routing.Stickiness = time.Minute
			sticky := NewSticky(10, time.Now)
			f := &Filter{router: r, sticky: sticky, log: slog.New(slog.DiscardHandler)}
			x := &filters.Exchange{ID: "rid", Policy: p, Route: p.Routes[0], Chat: chat(t, userMsg("mid", "hi"))}
			x.Chat.User = "u1"
			x.Caller.Tenant = p.Tenants[1]
			if err := f.RequestBody(context.Background(), x); err != nil {
				t.Fatal(err)
			}
			a, _ := x.NewAttempt(1, time.Now())
			a.Finish(filters.Outcome{Status: tt.status})
			x.Response.Status = tt.status
			x.Sent.Complete = tt.complete
			f.Done(context.Background(), x, nil)
			if _, got := sticky.Get("chat", "pro", "u1"); got != tt.want {
				t.Errorf("stuck = %v, want %v", got, tt.want)
			}
		})
	}
}
