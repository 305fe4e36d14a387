package calibration

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/state/store"
	"github.com/switchyard/switchyard/state/store/redistest"
)

// domains are score streams as different as real traffic gets: the
// shipped calibration's quantiles hold on none of them.
var domains = []struct {
	name string
	draw func(r *rand.Rand) float64
}{
	{"chat: mostly easy", func(r *rand.Rand) float64 { return math.Pow(r.Float64(), 4) * 0.5 }},
	{"code: nearly all hard", func(r *rand.Rand) float64 { return 0.9 + 0.1*math.Sqrt(r.Float64()) }},
	{"stem: narrow middle band", func(r *rand.Rand) float64 { return 0.45 + 0.05*r.NormFloat64()*0.5 }},
	{"mixed: two humps", func(r *rand.Rand) float64 {
		if r.IntN(3) == 0 {
			return 0.05 + 0.02*r.Float64()
		}
		return 0.7 + 0.2*r.Float64()
	}},
}

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func newTest(replica string, board Board, clk *clock) *Calibrator {
	c := New(replica, board, nil, nil)
	c.now = clk.Now
	return c
}

// strongShare is the share of n fresh draws at or above t.
func strongShare(r *rand.Rand, draw func(*rand.Rand) float64, t float64, n int) float64 {
	hits := 0
	for range n {
		if draw(r) >= t {
			hits++
		}
	}
	return float64(hits) / float64(n)
}

// TestStrongShareHoldsOnEveryDomain calibrates on each domain's traffic
// and routes fresh traffic of the same domain: the strong share is what
// was asked, within two points, where the shipped threshold (1 − share)
// misses by up to the whole range.
func TestStrongShareHoldsOnEveryDomain(t *testing.T) {
	for _, d := range domains {
		for _, share := range []float64{0.1, 0.25, 0.4, 0.7} {
			r := rand.New(rand.NewPCG(1, uint64(share*100)))
			clk := &clock{t: time.Unix(1_800_000_000, 0)}
			c := newTest("a", nil, clk)
			c.Track("chat", Target{Share: share, HalfLife: time.Hour, MinSamples: 200})
			for range 20_000 {
				c.Observe("chat", "acme", d.draw(r))
			}
			clk.t = clk.t.Add(10 * time.Second)
			c.Refresh(context.Background(), time.Minute)
			th, from := c.Threshold("chat", "acme", share, 200)
			if from != "tenant" {
				t.Fatalf("%s: threshold from %s, want the tenant's own", d.name, from)
			}
			got := strongShare(r, d.draw, th, 20_000)
			if math.Abs(got-share) > 0.02 {
				t.Errorf("%s, asked %.2f: strong share %.3f at threshold %.4f", d.name, share, got, th)
			}
			prior := strongShare(r, d.draw, 1-share, 20_000)
			t.Logf("%s, asked %.2f: calibrated %.3f, shipped threshold %.3f", d.name, share, got, prior)
		}
	}
}

// TestReplicasShareOneDistribution gives two replicas traffic of two
// different domains: after a refresh both read thresholds off the merged
// traffic, so the deployment's strong share is the one asked. The board
// is the embedded store and a real Redis.
func TestReplicasShareOneDistribution(t *testing.T) {
	for _, b := range []struct {
		name  string
		board func(t *testing.T, clk *clock) Board
	}{
		{"memory", func(_ *testing.T, clk *clock) Board { return store.NewMemory(store.Options{Clock: clk}) }},
		{"redis", func(t *testing.T, clk *clock) Board {
			srv, err := redistest.New()
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return store.NewRedis(c, store.Options{Clock: clk})
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1_800_000_000, 0)}
			testReplicas(t, clk, b.board(t, clk))
		})
	}
}

func testReplicas(t *testing.T, clk *clock, board Board) {
	a, b := newTest("a", board, clk), newTest("b", board, clk)
	const share = 0.3
	for _, c := range []*Calibrator{a, b} {
		c.Track("chat", Target{Share: share, HalfLife: time.Hour, MinSamples: 200})
	}
	r := rand.New(rand.NewPCG(7, 7))
	easy, hard := domains[0].draw, domains[1].draw
	for range 10_000 {
		a.Observe("chat", "acme", easy(r))
		b.Observe("chat", "acme", hard(r))
	}
	ctx := context.Background()
	a.Refresh(ctx, time.Minute)
	b.Refresh(ctx, time.Minute)
	a.Refresh(ctx, time.Minute) // a now sees b's sketch too

	ta, _ := a.Threshold("chat", "acme", share, 200)
	tb, _ := b.Threshold("chat", "acme", share, 200)
	if math.Abs(ta-tb) > 0.01 {
		t.Errorf("replicas disagree: %.4f and %.4f", ta, tb)
	}
	mixed := func(r *rand.Rand) float64 {
		if r.IntN(2) == 0 {
			return easy(r)
		}
		return hard(r)
	}
	if got := strongShare(r, mixed, ta, 20_000); math.Abs(got-share) > 0.02 {
		t.Errorf("deployment strong share %.3f at %.4f, want %.2f", got, ta, share)
	}
	// A replica that stops publishing drops out after the ttl.
	clk.t = clk.t.Add(2 * time.Minute)
	a.Refresh(ctx, time.Minute)
	ta, _ = a.Threshold("chat", "acme", share, 200)
	if got := strongShare(r, easy, ta, 20_000); math.Abs(got-share) > 0.02 {
		t.Errorf("after b left, a's own traffic: strong share %.3f, want %.2f", got, share)
	}
}

// TestFallbacks: a tenant with few scores uses its route's distribution,
// a route with few uses the shipped calibration.
func TestFallbacks(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	c := newTest("a", nil, clk)
	c.Track("chat", Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 100})
	if th, from := c.Threshold("chat", "acme", 0.4, 100); from != "prior" || th != 0.6 {
		t.Errorf("nothing seen: got %.3f from %s, want 0.6 from prior", th, from)
	}
	for i := range 1000 {
		c.Observe("chat", "big", 0.9+0.0001*float64(i%100))
	}
	for range 10 {
		c.Observe("chat", "small", 0.1)
	}
	c.Observe("untracked", "acme", 0.5)
	c.Refresh(context.Background(), time.Minute)
	if _, from := c.Threshold("chat", "big", 0.4, 100); from != "tenant" {
		t.Errorf("big tenant: from %s, want tenant", from)
	}
	th, from := c.Threshold("chat", "small", 0.4, 100)
	if from != "route" || th < 0.9 {
		t.Errorf("small tenant: %.3f from %s, want the route's (≥ 0.9)", th, from)
	}
	if _, from := c.Threshold("untracked", "acme", 0.4, 100); from != "prior" {
		t.Errorf("untracked route: from %s, want prior", from)
	}
	c.Retain(nil)
	if _, from := c.Threshold("chat", "big", 0.4, 100); from != "prior" {
		t.Errorf("dropped route: from %s, want prior", from)
	}
}

// TestFollowsAShift: old traffic fades with the half-life.
func TestFollowsAShift(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	c := newTest("a", nil, clk)
	c.Track("chat", Target{Share: 0.5, HalfLife: time.Minute, MinSamples: 100})
	r := rand.New(rand.NewPCG(3, 3))
	for range 5000 {
		c.Observe("chat", "acme", domains[0].draw(r))
	}
	c.Refresh(context.Background(), time.Minute)
	for range 10 { // ten half-lives of the new domain only
		clk.t = clk.t.Add(time.Minute)
		for range 500 {
			c.Observe("chat", "acme", domains[1].draw(r))
		}
		c.Refresh(context.Background(), time.Minute)
	}
	th, _ := c.Threshold("chat", "acme", 0.5, 100)
	if got := strongShare(r, domains[1].draw, th, 20_000); math.Abs(got-0.5) > 0.05 {
		t.Errorf("after the shift: strong share %.3f at %.4f, want 0.5", got, th)
	}
}

// TestBadSketchIgnored: garbage on the board is skipped, the replica's
// own view stands.
func TestBadSketchIgnored(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	board := store.NewMemory(store.Options{Clock: clk})
	c := newTest("a", board, clk)
	c.Track("chat", Target{Share: 0.5, HalfLife: time.Hour, MinSamples: 10})
	for i := range 100 {
		c.Observe("chat", "acme", float64(i)/100)
	}
	for _, junk := range [][]byte{{0xff, 0xff, 0xff}, {2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}} {
		if err := board.PutSketch(context.Background(), seriesName(Key{"chat", "acme"}), "evil", junk, time.Minute); err != nil {
			t.Fatal(err)
		}
		c.Refresh(context.Background(), time.Minute)
		if th, _ := c.Threshold("chat", "acme", 0.5, 10); math.Abs(th-0.5) > 0.02 {
			t.Errorf("junk %x moved the threshold to %.3f", junk, th)
		}
	}
}

// TestConcurrentUse routes, refreshes and reloads at once (run with
// -race): every threshold read is a valid score.
func TestConcurrentUse(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	c := newTest("a", store.NewMemory(store.Options{}), clk)
	c.Track("chat", Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 10})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			c.Refresh(ctx, time.Minute)
			c.Track("chat", Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 10})
		}
	}()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 5000 {
				c.Observe("chat", []string{"acme", "globex"}[r.IntN(2)], r.Float64())
				if th, _ := c.Threshold("chat", "acme", 0.4, 10); !(th >= 0 && th <= 1.01) {
					t.Errorf("threshold %v", th)
					return
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	<-done
}

// BenchmarkThreshold is the request path's share: a threshold lookup and
// an observation.
func BenchmarkThreshold(b *testing.B) {
	c := New("a", nil, nil, nil)
	c.Track("chat", Target{Share: 0.4, HalfLife: time.Hour, MinSamples: 10})
	for i := range 1000 {
		c.Observe("chat", "acme", float64(i)/1000)
	}
	c.Refresh(context.Background(), time.Minute)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		th, _ := c.Threshold("chat", "acme", 0.4, 10)
		c.Observe("chat", "acme", th)
	}
}
