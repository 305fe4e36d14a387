package router

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/sticky"
)

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
			users := sticky.New(10, time.Now)
			f := &Filter{router: r, sticky: users, log: slog.New(slog.DiscardHandler)}
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
			if _, got := users.Get("chat", "pro", "u1"); got != tt.want {
				t.Errorf("stuck = %v, want %v", got, tt.want)
			}
		})
	}
}
