package priors

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/filters/router/complexity"
	"github.com/switchyard/switchyard/state/store"
	"github.com/switchyard/switchyard/state/store/redistest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func shippedCurve(t testing.TB) []float64 {
	t.Helper()
	c, err := complexity.DefaultCurve()
	if err != nil {
		t.Fatal(err)
	}
	return c.Quality
}

func config(t testing.TB) Config {
	return Config{Curve: shippedCurve(t), HalfLife: 168 * time.Hour, MaxDomains: 100, PriorWeight: 8, Explore: 0.05}
}

// learner is a learner on board, tracking route "chat".
func learner(t testing.TB, board store.TallyBoard, reg prometheus.Registerer, c Config) (*Learner, *Route) {
	t.Helper()
	l := New(board, reg, nil)
	r, err := l.Track("chat", c)
	if err != nil {
		t.Fatal(err)
	}
	return l, r
}

// TestSlope: the exposure's slope is the one whose curve has the asked
// APGR, and the exposure averages 1 over the scores.
func TestSlope(t *testing.T) {
	tests := []struct {
		apgr      float64
		wantSlope float64 // < 0: only check the round trip
	}{
		{apgr: 0.5, wantSlope: 0},
		{apgr: 0.3, wantSlope: 0},
		{apgr: 0.58, wantSlope: -1},
		{apgr: 0.75, wantSlope: -1},
		{apgr: 0.9, wantSlope: -1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.apgr), func(t *testing.T) {
			b := slopeFor(tt.apgr)
			if tt.wantSlope >= 0 {
				if b != tt.wantSlope {
					t.Errorf("slope %g, want %g", b, tt.wantSlope)
				}
				return
			}
			if got := apgrOf(b); math.Abs(got-tt.apgr) > 1e-9 {
				t.Errorf("APGR of slope %g is %g, want %g", b, got, tt.apgr)
			}
			m := model{slope: b, base: 0.25}
			mean := 0.0
			const n = 100_000
			for i := range n {
				mean += m.exposure((float64(i) + 0.5) / n)
			}
			if mean /= n; math.Abs(mean-1) > 1e-6 {
				t.Errorf("mean exposure %g, want 1", mean)
			}
		})
	}
}

// TestShippedModel reads the shipped curve: its all-weak loss, and a
// slope that ranks the way the classifier measured (APGR near 0.59).
func TestShippedModel(t *testing.T) {
	q := shippedCurve(t)
	m, err := newModel(q)
	if err != nil {
		t.Fatal(err)
	}
	if m.base != 1-q[0] {
		t.Errorf("base %g, want %g", m.base, 1-q[0])
	}
	if a := apgrOf(m.slope); a < 0.55 || a > 0.65 {
		t.Errorf("slope %g ranks at APGR %g, want the shipped curve's (0.55..0.65)", m.slope, a)
	}
	for _, bad := range [][]float64{{0.7}, {1, 1}, {0, 1}} {
		if _, err := newModel(bad); err == nil {
			t.Errorf("curve %v accepted", bad)
		}
	}
}

// grade rates n weak answers of a domain at score 0.5, a share lossy of
// them as bad (verdict 0), the rest as good.
func grade(l *Learner, tenant, app string, fp uint64, n int, lossy float64) {
	for i := range n {
		v := 1.0
		if float64(i) < lossy*float64(n) {
			v = 0
		}
		l.Rate("chat", tenant, app, fp, 0.5, v, "judge")
	}
}

// TestDomainsLearnTheirLoss: a domain whose weak answers fail more than
// its tenant's others is shifted up, one that fails less down, one with
// no verdict stays at the prior (no shift), and the more verdicts the
// further a domain moves.
func TestDomainsLearnTheirLoss(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	reg := prometheus.NewRegistry()
	l, r := learner(t, store.NewMemory(store.Options{Clock: clk}), reg, config(t))
	quiet := r.Domain("acme", "notes", 0)
	for range 10 {
		r.Domain("acme", "law", 1).Routed(true)
		r.Domain("acme", "chat", 2).Routed(false)
		quiet.Routed(false)
	}
	grade(l, "acme", "law", 1, 40, 0.5)
	grade(l, "acme", "chat", 2, 40, 0.05)
	grade(l, "acme", "chat-few", 3, 4, 0)
	grade(l, "other", "law", 1, 40, 0.05) // another tenant's: moves nothing of acme's
	l.Refresh(context.Background())

	law, chat, few := r.Domain("acme", "law", 1).Shift(), r.Domain("acme", "chat", 2).Shift(), r.Domain("acme", "chat-few", 3).Shift()
	if !(law > 0.3 && chat < -0.3) {
		t.Errorf("shifts: lossy domain %+.3f (want > 0.3), good domain %+.3f (want < -0.3)", law, chat)
	}
	if !(few < 0 && few > chat) {
		t.Errorf("a good domain with 4 verdicts shifted %+.3f, want between %+.3f and 0", few, chat)
	}
	if s := quiet.Shift(); s != 0 {
		t.Errorf("a domain without verdicts shifted %+.3f, want 0 (the prior)", s)
	}
	if s := r.Domain("other", "law", 1).Shift(); math.Abs(s) > 1e-9 {
		t.Errorf("other's only domain shifted %+.3f, want 0: a tenant's average is its own", s)
	}
	for mode, want := range map[string]float64{ModePrior: 1, ModeShifted: 3} {
		if got := testutil.ToFloat64(l.metrics.domains.WithLabelValues("chat", "acme", mode)); got != want {
			t.Errorf("acme's domains in mode %s: %v, want %v", mode, got, want)
		}
	}
	if got := testutil.ToFloat64(l.metrics.verdicts.WithLabelValues("chat", "acme", "judge")); got != 84 {
		t.Errorf("acme's verdicts counted: %v, want 84", got)
	}
}

// TestScoreWeighing: verdicts taken only on a domain's easy requests (the
// ones the router sent weak) are read as the loss the classifier expects
// there, so a domain whose easy requests fail as often as another's
// average ones is the lossier of the two.
func TestScoreWeighing(t *testing.T) {
	l, r := learner(t, store.NewMemory(store.Options{}), nil, config(t))
	for i := range 60 {
		v := 1.0
		if i%5 == 0 {
			v = 0
		}
		l.Rate("chat", "acme", "easy-graded", 1, 0.05, v, "judge")
		l.Rate("chat", "acme", "mid-graded", 2, 0.5, v, "judge")
	}
	l.Refresh(context.Background())
	if e, m := r.Domain("acme", "easy-graded", 1).Shift(), r.Domain("acme", "mid-graded", 2).Shift(); e <= m {
		t.Errorf("shift of a domain graded on its easy requests %+.3f, on its average ones %+.3f: want the first higher", e, m)
	}
}

// TestSharedAndDurable: verdicts posted to one replica route the other
// after a refresh, and a replica started afresh on the same store (a
// restart) routes by them at its first refresh; in the embedded store
// and a real Redis.
func TestSharedAndDurable(t *testing.T) {
	for _, b := range []struct {
		name  string
		board func(t *testing.T, clk *clock) store.TallyBoard
	}{
		{"memory", func(_ *testing.T, clk *clock) store.TallyBoard { return store.NewMemory(store.Options{Clock: clk}) }},
		{"redis", func(t *testing.T, clk *clock) store.TallyBoard {
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
			ctx := context.Background()
			clk := &clock{t: time.Unix(1_800_000_000, 0)}
			board := b.board(t, clk)
			a, ra := learner(t, board, nil, config(t))
			bb, rb := learner(t, board, nil, config(t))
			for range 50 {
				ra.Domain("acme", "law", 7).Routed(true)
				rb.Domain("acme", "chat", 8).Routed(false)
			}
			grade(a, "acme", "law", 7, 30, 0.6)
			grade(bb, "acme", "chat", 8, 30, 0.05)
			a.Refresh(ctx)
			bb.Refresh(ctx)
			a.Refresh(ctx)
			for name, r := range map[string]*Route{"a": ra, "b": rb} {
				if law, chat := r.Domain("acme", "law", 7).Shift(), r.Domain("acme", "chat", 8).Shift(); !(law > 0 && chat < 0) {
					t.Errorf("replica %s: law %+.3f, chat %+.3f; want both replicas' verdicts in both", name, law, chat)
				}
			}
			clk.advance(time.Hour)
			restarted, rr := learner(t, board, nil, config(t))
			if s := rr.Domain("acme", "law", 7).Shift(); s != 0 {
				t.Fatalf("before its first refresh a new replica shifted %+.3f, want 0", s)
			}
			restarted.Refresh(ctx)
			if got, want := rr.Domain("acme", "law", 7).Shift(), ra.Domain("acme", "law", 7).Shift(); math.Abs(got-want) > 0.01 {
				t.Errorf("after a restart: law shifted %+.3f, want %+.3f as before", got, want)
			}
			rep := restarted.Report("chat", "acme")
			if len(rep) != 2 {
				t.Fatalf("the restarted replica reports %+v; want both domains", rep)
			}
			for _, d := range rep {
				// An hour of a week's half-life has faded them by 0.4 %.
				if math.Abs(d.Requests-49.79) > 0.01 || math.Abs(d.Verdicts-29.88) > 0.01 {
					t.Errorf("the restarted replica reports %+v; want 50 requests and 30 verdicts, an hour old", d)
				}
			}
		})
	}
}

// TestReset: a reset domain starts again from the prior, on the replica
// that reset it at once and on the others at their next refresh.
func TestReset(t *testing.T) {
	ctx := context.Background()
	board := store.NewMemory(store.Options{})
	a, ra := learner(t, board, nil, config(t))
	b, rb := learner(t, board, nil, config(t))
	grade(a, "acme", "law", 7, 30, 0.6)
	grade(a, "acme", "chat", 8, 30, 0.05)
	a.Refresh(ctx)
	b.Refresh(ctx)
	if rb.Domain("acme", "law", 7).Shift() <= 0 {
		t.Fatal("b never learnt the law domain")
	}
	if err := a.Reset(ctx, "chat", "acme", Key{App: "law", FP: 7}); err != nil {
		t.Fatal(err)
	}
	if s := ra.Domain("acme", "law", 7).Shift(); s != 0 {
		t.Errorf("after the reset a shifts law by %+.3f, want 0", s)
	}
	b.Refresh(ctx)
	if s := rb.Domain("acme", "law", 7).Shift(); s != 0 {
		t.Errorf("after its refresh b shifts law by %+.3f, want 0", s)
	}
	for _, d := range b.Report("chat", "acme") {
		if want := map[string]float64{"law": 0, "chat": 30}[d.App]; d.Verdicts != want {
			t.Errorf("after the reset b reports %s with %v verdicts, want %v", d.App, d.Verdicts, want)
		}
	}
	if err := a.Reset(ctx, "other-route", "acme", Key{App: "law", FP: 7}); err != ErrNotLearning {
		t.Errorf("reset on a route that does not learn: %v, want ErrNotLearning", err)
	}
}

// TestMaxDomains: a tenant keeps at most MaxDomains domains, here and on
// the board; a domain routed all along is not the one to go.
func TestMaxDomains(t *testing.T) {
	ctx := context.Background()
	c := config(t)
	c.MaxDomains = 50
	board := store.NewMemory(store.Options{})
	l, r := learner(t, board, nil, c)
	busy := r.Domain("acme", "busy", 1)
	grade(l, "acme", "busy", 1, 10, 0.5)
	for i := range 2000 {
		r.Domain("acme", "app", uint64(100+i)).Routed(false)
		r.Domain("acme", "busy", 1).Routed(true)
		if i%100 == 99 {
			l.Refresh(ctx)
		}
	}
	l.Refresh(ctx)
	tn := r.tenant("acme", false)
	if n := len(tn.domains); n > c.MaxDomains {
		t.Errorf("%d domains kept, want at most %d", n, c.MaxDomains)
	}
	if tn.domains[Key{App: "busy", FP: 1}] != busy {
		t.Error("the domain routed all along was evicted")
	}
	tallies, err := board.Tallies(ctx, series("chat", "acme"), c.HalfLife)
	if err != nil {
		t.Fatal(err)
	}
	if len(tallies) > c.MaxDomains {
		t.Errorf("the board holds %d domains, want at most %d", len(tallies), c.MaxDomains)
	}
}

// TestExploreBudget: the strong answers the learning may buy are a share
// of the strong calls routed, and do not pile up past a burst.
func TestExploreBudget(t *testing.T) {
	tests := []struct {
		name    string
		explore float64
		strong  int
		want    int
	}{
		{"a tenth of 100", 0.1, 100, 10},
		{"none", 0, 100, 0},
		{"saved up no further than the burst", 0.5, 1000, exploreBurst / unit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := config(t)
			c.Explore = tt.explore
			_, r := learner(t, store.NewMemory(store.Options{}), nil, c)
			d := r.Domain("acme", "app", 1)
			for range tt.strong {
				d.Routed(true)
				d.Routed(false) // weak calls buy nothing
			}
			got := 0
			for d.Explore() {
				got++
			}
			if got != tt.want {
				t.Errorf("bought %d strong answers, want %d", got, tt.want)
			}
		})
	}
}

// TestJudgeWeights: the judge draws more often where a domain's estimate
// is least sure, and as often as its plain sample over the tenant's
// traffic.
func TestJudgeWeights(t *testing.T) {
	l, r := learner(t, store.NewMemory(store.Options{}), nil, config(t))
	known, fresh := r.Domain("acme", "known", 1), r.Domain("acme", "fresh", 2)
	if w := known.JudgeWeight(); w != 0 {
		t.Errorf("weight before any refresh %g, want 0 (the plain sample)", w)
	}
	for range 300 {
		known.Routed(false)
	}
	for range 100 {
		fresh.Routed(false)
	}
	grade(l, "acme", "known", 1, 200, 0.2)
	l.Refresh(context.Background())
	wk, wf := known.JudgeWeight(), fresh.JudgeWeight()
	if !(wf > 1 && wk < 1) {
		t.Errorf("weights: known %.3f (want < 1), fresh %.3f (want > 1)", wk, wf)
	}
	if mean := (300*wk + 100*wf) / 400; math.Abs(mean-1) > 1e-9 {
		t.Errorf("traffic-weighted mean weight %.6f, want 1", mean)
	}
}

// TestRequestPathRace routes, rates, refreshes and reports at once (for
// -race), past the tenant's bound.
func TestRequestPathRace(t *testing.T) {
	c := config(t)
	c.MaxDomains = 20
	l, r := learner(t, store.NewMemory(store.Options{}), nil, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Run(ctx, time.Millisecond)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 3000 {
				fp := rng.Uint64N(50)
				d := r.Domain("acme", "app", fp)
				d.Routed(d.Shift() > 0)
				_ = d.Explore()
				l.Rate("chat", "acme", "app", fp, rng.Float64(), rng.Float64(), "feedback")
				if rng.IntN(500) == 0 {
					_ = l.Report("", "")
				}
			}
		}()
	}
	wg.Wait()
}

// TestCenter: a tenant's average learnt domain. With one domain it is
// that domain's own estimate (shift 0) however few its verdicts; with two
// alike in traffic it lies between them, evenly in logs.
func TestCenter(t *testing.T) {
	m, err := newModel(shippedCurve(t))
	if err != nil {
		t.Fatal(err)
	}
	ev := func(requests, verdicts, loss, exposure float64) [numSums]float64 {
		var e [numSums]float64
		e[sumRequests], e[sumVerdicts], e[sumLoss], e[sumExposure] = requests, verdicts, loss, exposure
		return e
	}
	tests := []struct {
		name string
		ev   [][numSums]float64
	}{
		{"one domain, one bad verdict", [][numSums]float64{ev(3, 1, 1, 0.4)}},
		{"one domain, many verdicts", [][numSums]float64{ev(1000, 300, 40, 310)}},
		{"two domains alike in traffic", [][numSums]float64{ev(100, 30, 20, 30), ev(100, 30, 2, 30)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := m.center(8, tt.ev, 1)
			var logs, weight float64
			for _, e := range tt.ev {
				if e[sumVerdicts] > 0 {
					f := m.factor(p, 8, e[sumLoss], e[sumExposure])
					logs += (e[sumRequests] + e[sumVerdicts]) * m.shift(f, p)
					weight += e[sumRequests] + e[sumVerdicts]
				}
			}
			if mean := logs / weight; math.Abs(mean) > 1e-9 {
				t.Errorf("center %g: the learnt domains' mean shift is %g, want 0", p, mean)
			}
		})
	}
	if p := m.center(8, [][numSums]float64{ev(10, 0, 0, 0)}, 0.7); p != 0.7 {
		t.Errorf("no verdicts: center %g, want the fallback 0.7", p)
	}
}

// TestOneDomainRoutesAsWithoutLearning: a tenant of one domain is routed
// as it would be without learning, whatever its verdicts, and so is a
// domain without verdicts beside it.
func TestOneDomainRoutesAsWithoutLearning(t *testing.T) {
	tests := []struct {
		name     string
		verdicts []float64
	}{
		{"one bad verdict", []float64{0}},
		{"two good verdicts", []float64{1, 1}},
		{"many mixed", []float64{1, 0, 1, 1, 0.5, 1, 0, 1, 1, 1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, r := learner(t, store.NewMemory(store.Options{}), nil, config(t))
			for range 50 {
				r.Domain("acme", "only", 1).Routed(true)
			}
			quiet := r.Domain("acme", "quiet", 2)
			for _, v := range tt.verdicts {
				l.Rate("chat", "acme", "only", 1, 0.3, v, "judge")
			}
			l.Refresh(context.Background())
			if s, q := r.Domain("acme", "only", 1).Shift(), quiet.Shift(); math.Abs(s) > 1e-9 || q != 0 {
				t.Errorf("shifts: the learnt domain %+g, the quiet one %+g; want 0", s, q)
			}
		})
	}
}
