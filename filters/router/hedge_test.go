package router

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/sticky"
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
	r, err := NewRouter(p, p.Routes[0], h, sticky.New(100, time.Now))
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

// TestDegradedNamedModelYields: a degraded model a client named keeps
// its weight's share of the requests first (half); the others go to its
// first fallback first, with the model behind it. Healthy, it always goes
// first.
func TestDegradedNamedModelYields(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		health fakeHealth
		want   float64 // share of requests the named model serves first
	}{
		{"healthy", fakeHealth{}, 1},
		{"degraded to half", fakeHealth{weight: map[string]float64{"oa": 0.5}}, 0.5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := testRouter(t, false, tt.health)
			const n = 4000
			first := 0
			for key := range uint64(n) {
				d, e := r.Decide(&Query{Chat: chat(t, userMsg("strong", "hi")), Hash: HashID(fmt.Sprint("request ", key))})
				if e != nil {
					t.Fatal(e)
				}
				switch names(d.Plan) {
				case "strong,mid":
					first++
				case "mid,strong":
					if !strings.Contains(d.Reason, "strong degraded: mid first for this request") {
						t.Fatalf("reason %q", d.Reason)
					}
				default:
					t.Fatalf("plan %s", names(d.Plan))
				}
			}
			share, sd := float64(first)/n, math.Sqrt(tt.want*(1-tt.want)/n)
			if math.Abs(share-tt.want) > 4*sd+1e-9 {
				t.Errorf("strong first in %.3f of requests, want %.2f", share, tt.want)
			}
		})
	}
}
