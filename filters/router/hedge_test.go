package router

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// hedgedFilter is the router filter of testPolicy's chat route with hedge
// (a YAML flow mapping, or "" for none) and the given health.
func hedgedFilter(t *testing.T, hedge string, h Health) (*Filter, *policy.Policy) {
	t.Helper()
	y := strings.Replace(testPolicy, "    attempts: 3\n", "    attempts: 3\n    hedge: "+hedge+"\n", 1)
	if hedge == "" {
		y = testPolicy
	}
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(strings.Replace(y, "%s", "false", 1))}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(p, p.Routes[0], h, NewSticky(100, time.Now))
	if err != nil {
		t.Fatal(err)
	}
	return &Filter{router: r, health: h, log: slog.New(slog.DiscardHandler)}, p
}

func TestHedgeDecision(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, hedge, model string
		latency            map[string]time.Duration
		want               *filters.Hedge
	}{
		{name: "route without hedge", model: "strong"},
		{name: "fixed delay", hedge: "{after: 800ms, max: 1}", model: "strong", want: &filters.Hedge{After: 800 * time.Millisecond}},
		{name: "the first target's p95, to the millisecond", hedge: "{after: p95, max: 1}", model: "strong",
			latency: map[string]time.Duration{"oa": 1234567 * time.Microsecond}, want: &filters.Hedge{After: 1235 * time.Millisecond}},
		{name: "no p95 yet, no hedge", hedge: "{after: p95, max: 1}", model: "strong"},
		{name: "first two targets on one provider", hedge: "{after: 800ms, max: 1}", model: "mid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, p := hedgedFilter(t, tt.hedge, fakeHealth{latency: tt.latency})
			x := &filters.Exchange{ID: "rid", Policy: p, Route: p.Routes[0], Chat: chat(t, userMsg(tt.model, "hi"))}
			if err := f.RequestBody(context.Background(), x); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, x.Hedge); diff != "" {
				t.Errorf("hedge of plan %v (-want +got):\n%s", x.Plan, diff)
			}
		})
	}
}

// TestHedgeHeader: a hedged answer says when its hedge was due, how many
// attempts ran and which answered.
func TestHedgeHeader(t *testing.T) {
	t.Parallel()
	f, p := hedgedFilter(t, "{after: 800ms, max: 1}", fakeHealth{})
	x := &filters.Exchange{ID: "rid", Policy: p, Route: p.Routes[0], Chat: chat(t, userMsg("strong", "hi"))}
	if err := f.RequestBody(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	x.NewAttempt(1, time.Unix(1, 0))
	x.NewAttempt(2, time.Unix(2, 0))
	x.SetAnswered(1)
	if err := f.ResponseHeaders(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	set, _ := x.TakeResponseMutations()
	got := ""
	for _, h := range set {
		if h.Key == HeaderHedge {
			got = h.Value
		}
	}
	if want := "after=800ms; attempts=2; won=1"; got != want {
		t.Errorf("%s: %q, want %q", HeaderHedge, got, want)
	}
}
