package calibration

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/switchyard/switchyard/state/store"
)

// TestNextShare: one refresh's step of the strong share from ratings of
// weak-model answers, against a bar of 0.8.
func TestNextShare(t *testing.T) {
	bounds := Adjust{Min: 0.2, Max: 0.6, Bar: 0.8}
	for _, c := range []struct {
		name      string
		share     float64
		good, bad float64
		want      float64
	}{
		{"no feedback: no change", 0.4, 0, 0, 0.4},
		{"too few ratings, all bad: no change", 0.4, 0, minRatings - 1, 0.4},
		{"bad feedback raises the share", 0.4, 10, 40, 0.41},
		{"good feedback lowers the share", 0.4, 195, 5, 0.39},
		{"feedback near the bar: no change", 0.4, 80, 20, 0.4},
		{"noisy but too few to tell: no change", 0.4, 17, 8, 0.4},
		{"bad feedback at the upper bound stays there", 0.6, 0, 500, 0.6},
		{"good feedback at the lower bound stays there", 0.2, 500, 0, 0.2},
		{"a share outside the bounds is brought in", 0.9, 80, 20, 0.6},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := nextShare(c.share, c.good, c.bad, bounds)
			if math.Abs(got-c.want) > 1e-9 {
				t.Errorf("nextShare(%g, good %g, bad %g) = %g, want %g", c.share, c.good, c.bad, got, c.want)
			}
		})
	}
}

// TestFeedbackMovesTheShare drives a calibrator with ratings on its
// refresh tick: sustained bad ratings walk the share up to the bound and
// no further, good ones walk it down to the other, and a route without
// ratings, or without adjust, keeps what was asked.
func TestFeedbackMovesTheShare(t *testing.T) {
	adj := &Adjust{Min: 0.3, Max: 0.5, Bar: 0.8}
	for _, c := range []struct {
		name   string
		adjust *Adjust
		score  float64 // every rating given; < 0: none
		want   float64
	}{
		{"bad ratings raise it to max", adj, 0.2, 0.5},
		{"good ratings lower it to min", adj, 1, 0.3},
		{"no ratings: as asked", adj, -1, 0.4},
		{"ratings at the bar: as asked", adj, 0.8, 0.4},
		{"no adjust: ratings ignored", nil, 0, 0.4},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1_800_000_000, 0)}
			cal := newTest("a", nil, clk)
			cal.Track("chat", Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 200, Adjust: c.adjust})
			prev := cal.Share("chat", "", 0.4)
			for range 100 {
				if c.score >= 0 {
					for range 5 {
						cal.Rate("chat", "", c.score)
					}
				}
				clk.t = clk.t.Add(5 * time.Second)
				cal.Refresh(context.Background(), 15*time.Second)
				s := cal.Share("chat", "", 0.4)
				if s < 0.3-1e-9 || s > 0.5+1e-9 {
					t.Fatalf("share %g left the bounds [0.3, 0.5]", s)
				}
				if math.Abs(s-prev) > adjustStep+1e-9 {
					t.Fatalf("share jumped from %g to %g in one refresh", prev, s)
				}
				prev = s
			}
			if got := cal.Share("chat", "", 0.4); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("share after 100 refreshes = %g, want %g", got, c.want)
			}
		})
	}
}

// TestFeedbackSharedAcrossReplicas: ratings posted to one replica move
// the share of another through the shared store, and a policy reload
// that keeps the target keeps what was learnt within its new bounds.
func TestFeedbackSharedAcrossReplicas(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	board := store.NewMemory(store.Options{Clock: clk})
	a, b := newTest("a", board, clk), newTest("b", board, clk)
	target := Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 200, Adjust: &Adjust{Min: 0.2, Max: 0.8, Bar: 0.9}}
	a.Track("chat", target)
	b.Track("chat", target)
	for range 200 {
		a.Rate("chat", "", 0)
	}
	ctx := context.Background()
	for range 10 {
		clk.t = clk.t.Add(5 * time.Second)
		a.Refresh(ctx, 15*time.Second)
		b.Refresh(ctx, 15*time.Second)
	}
	sa, sb := a.Share("chat", "", 0.4), b.Share("chat", "", 0.4)
	if sb <= 0.4 || math.Abs(sa-sb) > adjustStep+1e-9 {
		t.Errorf("replica b's share %g, a's %g: b should follow a's ratings", sb, sa)
	}
	narrower := target
	narrower.Adjust = &Adjust{Min: 0.2, Max: 0.45, Bar: 0.9}
	b.Track("chat", narrower)
	if got := b.Share("chat", "", 0.4); got != 0.45 {
		t.Errorf("after a reload to max 0.45: share %g, want 0.45", got)
	}
	moved := narrower
	moved.Share = 0.3
	b.Track("chat", moved)
	if got := b.Share("chat", "", 0.3); got != 0.3 {
		t.Errorf("after a reload to a new share: %g, want 0.3 (what was asked)", got)
	}
	// A bad blob on the board is skipped, not summed.
	if err := board.PutSketch(ctx, "routing-feedback:chat", "c", []byte{1, 2, 3}, time.Minute); err != nil {
		t.Fatal(err)
	}
	b.Refresh(ctx, 15*time.Second)
	if got := b.Share("chat", "", 0.3); got < 0.2 || got > 0.45 {
		t.Errorf("share %g left the bounds after a bad blob", got)
	}
}

// TestTenantsRateTheirOwn: a tenant's ratings move that tenant's share,
// which starts from the route's, and no one else's; the route's share (the
// judge's) moves every tenant that has no share of its own.
func TestTenantsRateTheirOwn(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cal := newTest("a", nil, clk)
	cal.Track("chat", Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 200, Adjust: &Adjust{Min: 0.2, Max: 0.8, Bar: 0.9}})
	for range 200 {
		cal.Rate("chat", "acme", 0)
	}
	for range 10 {
		clk.t = clk.t.Add(5 * time.Second)
		cal.Refresh(context.Background(), 15*time.Second)
	}
	if got := cal.Share("chat", "acme", 0.4); got <= 0.45 {
		t.Errorf("acme's share %g after its bad ratings; want it raised", got)
	}
	for _, who := range []string{"globex", ""} {
		if got := cal.Share("chat", who, 0.4); got != 0.4 {
			t.Errorf("%q's share %g; acme's ratings must not move it", who, got)
		}
	}
	for range 200 {
		cal.Rate("chat", "", 1)
	}
	for range 10 {
		clk.t = clk.t.Add(5 * time.Second)
		cal.Refresh(context.Background(), 15*time.Second)
	}
	if route, globex, acme := cal.Share("chat", "", 0.4), cal.Share("chat", "globex", 0.4), cal.Share("chat", "acme", 0.4); route >= 0.4 || globex != route || acme <= 0.45 {
		t.Errorf("after the judge's good verdicts: route %g, globex %g, acme %g; want the route and globex lowered together, acme kept", route, globex, acme)
	}
	sh, ok := cal.Shares("chat")
	if !ok || sh.Target.Share != 0.4 || sh.Route != cal.Share("chat", "", 0.4) ||
		len(sh.Tenants) != 1 || sh.Tenants["acme"] != cal.Share("chat", "acme", 0.4) {
		t.Errorf("Shares: %+v, %v; want the target, the route's share and acme's alone", sh, ok)
	}
	cal.Retain(nil)
	if _, ok := cal.Shares("chat"); ok {
		t.Error("a dropped route still has shares")
	}
	if got := cal.Share("chat", "acme", 0.4); got != 0.4 {
		t.Errorf("a dropped route's tenant share survived: %g", got)
	}
}

// TestTenantRatingsReachEveryReplica: a tenant's ratings posted to one
// replica move its share on a replica that never saw the tenant.
func TestTenantRatingsReachEveryReplica(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	board := store.NewMemory(store.Options{Clock: clk})
	a, b := newTest("a", board, clk), newTest("b", board, clk)
	target := Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 200, Adjust: &Adjust{Min: 0.2, Max: 0.8, Bar: 0.9}}
	a.Track("chat", target)
	b.Track("chat", target)
	for range 200 {
		a.Rate("chat", "acme", 0)
	}
	for range 10 {
		clk.t = clk.t.Add(5 * time.Second)
		a.Refresh(context.Background(), 15*time.Second)
		b.Refresh(context.Background(), 15*time.Second)
	}
	if got := b.Share("chat", "acme", 0.4); got <= 0.4 {
		t.Errorf("replica b's share for acme %g; want it raised by acme's ratings on a", got)
	}
	if got := b.Share("chat", "globex", 0.4); got != 0.4 {
		t.Errorf("replica b's share for globex %g; want the route's 0.4", got)
	}
}
