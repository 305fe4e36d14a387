package health

import (
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestModelStates walks one model through every window-driven transition.
// Each step observes attempts after the clock moved by wait, then checks
// the model's own state and the records logged at Warn or above.
func TestModelStates(t *testing.T) {
	type step struct {
		name       string
		wait       time.Duration
		ok, failed int
		latency    time.Duration
		quota      float64
		want       State
		wantReason string
		wantAlerts []string // the Warn+ records this step logged
	}
	const who = "provider=openai model=gpt-4o "
	steps := []step{
		{name: "starts healthy", want: Healthy},
		{name: "good traffic", ok: 100, latency: 500 * time.Millisecond, quota: -1, want: Healthy},
		{
			name: "2% errors degrade", failed: 2, quota: -1, want: Degraded, wantReason: "error rate 2% ≥ 1%",
			wantAlerts: []string{"WARN model degraded " + who + "from=healthy reason=error rate 2% ≥ 1%"},
		},
		{name: "more errors while degraded log nothing", failed: 1, quota: -1, want: Degraded, wantReason: "error rate 2.9% ≥ 1%"},
		{
			name: "above 5% is unavailable", failed: 4, quota: -1, want: Unavailable, wantReason: "error rate 6.5% > 5%",
			wantAlerts: []string{"ERROR model unavailable " + who + "from=degraded reason=error rate 5.7% > 5%"},
		},
		{name: "unavailable while the errors are in the window", wait: 30 * time.Second, want: Unavailable, wantReason: "error rate 6.5% > 5%"},
		{name: "window drained", wait: 30 * time.Second, want: Healthy},
		{
			name: "slow p99 degrades", ok: 30, latency: 4 * time.Second, quota: -1, want: Degraded, wantReason: "p99 4s ≥ 3s",
			wantAlerts: []string{"WARN model degraded " + who + "from=healthy reason=p99 4s ≥ 3s"},
		},
		{
			name: "very slow p99 is unavailable", ok: 30, latency: 7 * time.Second, quota: -1, want: Unavailable, wantReason: "p99 7s > 6s",
			wantAlerts: []string{"ERROR model unavailable " + who + "from=degraded reason=p99 7s > 6s"},
		},
		{name: "drained again", wait: time.Minute, want: Healthy},
		{
			name: "low quota degrades", ok: 1, quota: 0.15, want: Degraded, wantReason: "quota 15% ≤ 20%",
			wantAlerts: []string{"WARN model degraded " + who + "from=healthy reason=quota 15% ≤ 20%"},
		},
		{name: "quota back up: healthy again, no alert", ok: 1, quota: 0.5, want: Healthy},
		{
			name: "exhausted quota: straight to unavailable", ok: 1, quota: 0.01, want: Unavailable, wantReason: "quota 1% < 5%",
			wantAlerts: []string{"ERROR model unavailable " + who + "from=healthy reason=quota 1% < 5%"},
		},
		{name: "quota restored", ok: 1, quota: 0.9, want: Healthy},
		{name: "unknown quota keeps the last reading", ok: 1, quota: -1, want: Healthy},
	}
	cfg := scenarioConfig()
	cfg.Breaker.ConsecutiveFailures, cfg.Breaker.FailureRatio = 0, 0 // the breaker has its own tests
	cfg.Recovery.Steps = nil                                         // and so has the canary
	f := newFixture(t, cfg)
	f.Track(map[string][]string{"openai": {"gpt-4o"}})
	for _, s := range steps {
		f.clock.Add(s.wait)
		for i := range s.ok + s.failed {
			status := 200
			if i >= s.ok {
				status = 503
			}
			f.Observe(Observation{Provider: "openai", Model: "gpt-4o", Status: status, Latency: s.latency, Quota: s.quota})
		}
		got := f.model(t, "openai", "gpt-4o")
		if got.State != s.want || got.Reason != s.wantReason {
			t.Errorf("%s: state %v %q, want %v %q", s.name, got.State, got.Reason, s.want, s.wantReason)
		}
		var alerts []string
		for _, r := range atLeast(f.log.take(), slog.LevelWarn) {
			alerts = append(alerts, r.Level.String()+" "+r.Msg+" "+r.Attrs)
		}
		if diff := cmp.Diff(s.wantAlerts, alerts); diff != "" {
			t.Errorf("%s: alerts (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestProviderRecovery drives a provider through its breaker and canary:
// closed → open → half-open → closed with a canary at 10 %, 50 %, 100 %.
func TestProviderRecovery(t *testing.T) {
	f := newFixture(t, scenarioConfig())
	admit := func(key uint64) Admission { return f.Admit("anthropic", "claude", key) }
	type check struct {
		name        string
		wait        time.Duration
		do          func()
		key         uint64
		want        Admission
		wantBreaker BreakerState
		wantCanary  *CanaryStatus
	}
	fail := func() {
		f.Observe(Observation{Provider: "anthropic", Model: "claude", Status: 529, Latency: time.Second, Quota: -1})
	}
	fails := func(n int) func() {
		return func() {
			for range n {
				fail()
			}
		}
	}
	probeOK := func(key uint64) func() {
		return func() {
			f.Observe(Observation{Provider: "anthropic", Model: "claude", Status: 200, Latency: time.Second, Quota: -1, Key: key})
		}
	}
	var recovered time.Time
	checks := []check{
		{name: "healthy", key: 7, want: Admission{Allowed: true, Weight: 1, Reason: "healthy"}, wantBreaker: BreakerClosed},
		{name: "4 failures keep it closed", do: fails(4), key: 7, want: Admission{Allowed: true, Weight: 1, Reason: "healthy"}, wantBreaker: BreakerClosed},
		{name: "5th failure opens", do: fails(1), key: 7, want: Admission{State: Unavailable, Reason: "breaker open: 5 consecutive failures"}, wantBreaker: BreakerOpen},
		{name: "still open before the timeout", wait: 29 * time.Second, key: 7, want: Admission{State: Unavailable, Reason: "breaker open: 5 consecutive failures"}, wantBreaker: BreakerOpen},
		{name: "half-open: first probe", wait: time.Second, key: 1, want: Admission{Allowed: true, Weight: 1, State: Unavailable, Reason: "breaker half-open: probe", Probe: true}, wantBreaker: BreakerHalfOpen},
		{name: "half-open: second probe", key: 2, want: Admission{Allowed: true, Weight: 1, State: Unavailable, Reason: "breaker half-open: probe", Probe: true}, wantBreaker: BreakerHalfOpen},
		{name: "half-open: third probe", key: 3, want: Admission{Allowed: true, Weight: 1, State: Unavailable, Reason: "breaker half-open: probe", Probe: true}, wantBreaker: BreakerHalfOpen},
		{name: "half-open: slots exhausted", key: 4, want: Admission{State: Unavailable, Reason: "breaker half-open: every probe slot taken"}, wantBreaker: BreakerHalfOpen},
		{name: "two probes succeed", do: func() { probeOK(1)(); probeOK(2)() }, key: 4, want: Admission{State: Unavailable, Reason: "breaker half-open: every probe slot taken"}, wantBreaker: BreakerHalfOpen},
		{
			name: "third probe closes: canary 10%, request in", do: func() { probeOK(3)(); recovered = f.clock.Now() }, key: 1099,
			want: Admission{Allowed: true, Weight: 1, Reason: "canary 10%"}, wantBreaker: BreakerClosed,
			wantCanary: &CanaryStatus{Step: 0, Share: 0.1, Started: t0.Add(30 * time.Second), StepStarted: t0.Add(30 * time.Second)},
		},
		{
			name: "canary 10%, request out", key: 100,
			want: Admission{Reason: "canary 10%: not this request"}, wantBreaker: BreakerClosed,
			wantCanary: &CanaryStatus{Step: 0, Share: 0.1, Started: t0.Add(30 * time.Second), StepStarted: t0.Add(30 * time.Second)},
		},
		{
			name: "one stable period: 50%", wait: 5 * time.Minute, key: 499,
			want: Admission{Allowed: true, Weight: 1, Reason: "canary 50%"}, wantBreaker: BreakerClosed,
			wantCanary: &CanaryStatus{Step: 1, Share: 0.5, Started: t0.Add(30 * time.Second), StepStarted: t0.Add(30*time.Second + 5*time.Minute)},
		},
		{
			name: "50%, request out", key: 500,
			want: Admission{Reason: "canary 50%: not this request"}, wantBreaker: BreakerClosed,
			wantCanary: &CanaryStatus{Step: 1, Share: 0.5, Started: t0.Add(30 * time.Second), StepStarted: t0.Add(30*time.Second + 5*time.Minute)},
		},
		{
			name: "second stable period: 100%, canary over", wait: 5 * time.Minute, key: 999,
			want: Admission{Allowed: true, Weight: 1, Reason: "healthy"}, wantBreaker: BreakerClosed,
		},
	}
	for _, c := range checks {
		f.clock.Add(c.wait)
		if c.do != nil {
			c.do()
		}
		if got := admit(c.key); got != c.want {
			t.Errorf("%s: Admit = %+v, want %+v", c.name, got, c.want)
		}
		p := f.providerStatus(t, "anthropic")
		if p.Breaker.State != c.wantBreaker {
			t.Errorf("%s: breaker %v, want %v", c.name, p.Breaker.State, c.wantBreaker)
		}
		if diff := cmp.Diff(c.wantCanary, p.Canary); diff != "" {
			t.Errorf("%s: canary (-want +got):\n%s", c.name, diff)
		}
	}
	if want := t0.Add(30 * time.Second); !recovered.Equal(want) {
		t.Errorf("recovered at %v, want %v", recovered, want)
	}
	var msgs []string
	for _, r := range f.log.take() {
		if strings.Contains(r.Attrs, "model=") {
			continue
		}
		msgs = append(msgs, r.Level.String()+" "+r.Msg+" "+r.Attrs)
	}
	want := []string{
		"INFO circuit breaker open provider=anthropic from=closed reason=5 consecutive failures",
		"ERROR provider unavailable provider=anthropic from=healthy reason=breaker open: 5 consecutive failures",
		"INFO circuit breaker half_open provider=anthropic from=open reason=5 consecutive failures",
		"INFO circuit breaker closed provider=anthropic from=half_open reason=",
		"INFO provider healthy provider=anthropic from=unavailable reason=",
		"INFO provider canary provider=anthropic step=0 share=0.1",
		"INFO provider canary provider=anthropic step=1 share=0.5",
		"INFO provider recovered provider=anthropic reason=all steps passed",
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("provider log (-want +got):\n%s", diff)
	}
}

func TestCanaryFailure(t *testing.T) {
	tests := []struct {
		name string
		// setup brings the subject into its canary.
		setup       func(f *fixture)
		wantAdmit   Admission
		wantBreaker BreakerState
		wantHeld    time.Time
		// after the hold or open timeout
		wantLater Admission
	}{
		{
			name: "provider canary failure reopens the breaker",
			setup: func(f *fixture) {
				f.SetDrill("openai", true)
				f.SetDrill("openai", false)
			},
			wantAdmit:   Admission{State: Unavailable, Reason: "breaker open: failure during canary"},
			wantBreaker: BreakerOpen,
			wantLater:   Admission{Allowed: true, Weight: 1, State: Unavailable, Reason: "breaker half-open: probe", Probe: true},
		},
		{
			name: "model canary failure holds the model",
			setup: func(f *fixture) {
				for range 10 { // 25 % errors: unavailable, yet no breaker trip
					f.Observe(Observation{Provider: "openai", Model: "gpt-4o", Status: 500, Quota: -1})
					f.observeN("openai", "gpt-4o", 3, 200, 0)
				}
				f.clock.Add(time.Minute) // drained: canary
			},
			wantAdmit:   Admission{State: Unavailable, Reason: "unavailable: failure during canary"},
			wantBreaker: BreakerClosed,
			wantHeld:    t0.Add(time.Minute + 30*time.Second),
			wantLater:   Admission{Allowed: true, Weight: 1, Reason: "canary 10%"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, scenarioConfig())
			tt.setup(f)
			if a := f.Admit("openai", "gpt-4o", 1); a.Reason != "canary 10%" {
				t.Fatalf("before the failure: Admit = %+v, want a canary at 10%%", a)
			}
			f.Observe(Observation{Provider: "openai", Model: "gpt-4o", Status: 502, Quota: -1})
			if got := f.Admit("openai", "gpt-4o", 1); got != tt.wantAdmit {
				t.Errorf("after the failure: Admit = %+v, want %+v", got, tt.wantAdmit)
			}
			p := f.providerStatus(t, "openai")
			if p.Breaker.State != tt.wantBreaker {
				t.Errorf("breaker %v, want %v", p.Breaker.State, tt.wantBreaker)
			}
			if got := f.model(t, "openai", "gpt-4o").HeldUntil; !got.Equal(tt.wantHeld) {
				t.Errorf("held until %v, want %v", got, tt.wantHeld)
			}
			f.clock.Add(30 * time.Second)
			if got := f.Admit("openai", "gpt-4o", 1); got != tt.wantLater {
				t.Errorf("30s later: Admit = %+v, want %+v", got, tt.wantLater)
			}
		})
	}
}

func TestCanaryTiming(t *testing.T) {
	tests := []struct {
		name   string
		change func(*RecoveryConfig)
		// degradedAt lists times (since the canary began) at which the
		// model is seen degraded.
		degradedAt []time.Duration
		at         time.Duration
		wantShare  float64 // 1: no canary
	}{
		{name: "step 0 at start", at: 0, wantShare: 0.1},
		{name: "step 0 just before the period", at: 5*time.Minute - time.Second, wantShare: 0.1},
		{name: "step 1 after the period", at: 5 * time.Minute, wantShare: 0.5},
		{name: "done after two periods", at: 10 * time.Minute, wantShare: 1},
		{name: "a late look catches up every step", at: time.Hour, wantShare: 1},
		{name: "degraded restarts the step", degradedAt: []time.Duration{4 * time.Minute}, at: 8 * time.Minute, wantShare: 0.1},
		{name: "stable again after degraded", degradedAt: []time.Duration{4 * time.Minute}, at: 9 * time.Minute, wantShare: 0.5},
		{
			name: "max canary ends a canary held back", at: 30 * time.Minute, wantShare: 1,
			degradedAt: []time.Duration{4 * time.Minute, 8 * time.Minute, 12 * time.Minute, 16 * time.Minute, 20 * time.Minute, 24 * time.Minute, 28 * time.Minute},
		},
		{
			name: "just before max canary", at: 30*time.Minute - time.Second, wantShare: 0.1,
			degradedAt: []time.Duration{4 * time.Minute, 8 * time.Minute, 12 * time.Minute, 16 * time.Minute, 20 * time.Minute, 24 * time.Minute, 28 * time.Minute},
		},
		{name: "steps not ending at 1 end after the last", change: func(r *RecoveryConfig) { r.Steps = []float64{0.2, 0.6} }, at: 10 * time.Minute, wantShare: 1},
		{name: "steps not ending at 1, last step", change: func(r *RecoveryConfig) { r.Steps = []float64{0.2, 0.6} }, at: 9 * time.Minute, wantShare: 0.6},
		{name: "no cap", change: func(r *RecoveryConfig) { r.MaxCanary = 0; r.StablePeriod = time.Hour }, at: 50 * time.Minute, wantShare: 0.1},
		{name: "recovery off", change: func(r *RecoveryConfig) { r.Steps = nil }, at: 0, wantShare: 1},
		{name: "first step full", change: func(r *RecoveryConfig) { r.Steps = []float64{1} }, at: 0, wantShare: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := scenarioConfig().Recovery
			if tt.change != nil {
				tt.change(&r)
			}
			s := status{state: Unavailable, since: t0}
			s.update(Healthy, "", t0, &r)
			for _, d := range tt.degradedAt {
				s.update(Degraded, "p99", t0.Add(d), &r)
				s.update(Healthy, "", t0.Add(d), &r)
			}
			s.update(Healthy, "", t0.Add(tt.at), &r)
			if got := s.canary.share(&r); got != tt.wantShare {
				t.Errorf("share = %v, want %v", got, tt.wantShare)
			}
		})
	}
}

// requestKey hashes a request ID as a router would.
func requestKey(i int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "req-%d", i)
	return h.Sum64()
}

func TestCanaryShareOverManyKeys(t *testing.T) {
	tests := []struct {
		name     string
		wait     time.Duration
		min, max float64
	}{
		{name: "step 0", min: 0.09, max: 0.11},
		{name: "step 1", wait: 5 * time.Minute, min: 0.49, max: 0.51},
		{name: "done", wait: 5 * time.Minute, min: 1, max: 1},
	}
	f := newFixture(t, scenarioConfig())
	f.SetDrill("mistral", true)
	f.SetDrill("mistral", false)
	const n = 10000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Add(tt.wait)
			allowed := 0
			for i := range n {
				if f.Admit("mistral", "large", requestKey(i)).Allowed {
					allowed++
				}
			}
			if got := float64(allowed) / n; got < tt.min || got > tt.max {
				t.Errorf("admitted %.2f%% of %d requests, want %.0f%%..%.0f%%", 100*got, n, 100*tt.min, 100*tt.max)
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fixture)
		key   uint64
		want  Admission
	}{
		{name: "unknown model is healthy", setup: func(*fixture) {}, want: Admission{Allowed: true, Weight: 1, Reason: "healthy"}},
		{
			name:  "degraded halves the weight",
			setup: func(f *fixture) { f.observeN("p", "m", 20, 200, 4*time.Second) },
			want:  Admission{Allowed: true, Weight: 0.5, State: Degraded, Reason: "degraded: p99 4s ≥ 3s"},
		},
		{
			name: "degraded weight follows the config",
			setup: func(f *fixture) {
				c := scenarioConfig()
				c.DegradedWeight = 0.2
				if err := f.Reconfigure(c); err != nil {
					panic(err)
				}
				f.observeN("p", "m", 20, 200, 4*time.Second)
			},
			want: Admission{Allowed: true, Weight: 0.2, State: Degraded, Reason: "degraded: p99 4s ≥ 3s"},
		},
		{
			name:  "unavailable model",
			setup: func(f *fixture) { f.observeN("p", "m", 20, 200, 7*time.Second) },
			want:  Admission{State: Unavailable, Reason: "unavailable: p99 7s > 6s"},
		},
		{
			name:  "sibling model of an unavailable one",
			setup: func(f *fixture) { f.observeN("p", "other", 20, 200, 7*time.Second) },
			want:  Admission{Allowed: true, Weight: 1, Reason: "healthy"},
		},
		{
			name:  "drilled provider",
			setup: func(f *fixture) { f.SetDrill("p", true) },
			want:  Admission{State: Unavailable, Reason: "fault drill"},
		},
		{
			name:  "other provider drilled",
			setup: func(f *fixture) { f.SetDrill("q", true) },
			want:  Admission{Allowed: true, Weight: 1, Reason: "healthy"},
		},
		{
			name:  "open breaker",
			setup: func(f *fixture) { f.observeN("p", "other", 5, 500, 0) },
			want:  Admission{State: Unavailable, Reason: "breaker open: 5 consecutive failures"},
		},
		{
			name: "degraded during canary: request in",
			setup: func(f *fixture) {
				f.SetDrill("p", true)
				f.SetDrill("p", false)
				f.observeN("p", "m", 20, 200, 4*time.Second)
			},
			key:  42,
			want: Admission{Allowed: true, Weight: 0.5, State: Degraded, Reason: "canary 10%, degraded: p99 4s ≥ 3s"},
		},
		{
			name: "degraded during canary: request out",
			setup: func(f *fixture) {
				f.SetDrill("p", true)
				f.SetDrill("p", false)
				f.observeN("p", "m", 20, 200, 4*time.Second)
			},
			key:  142,
			want: Admission{State: Degraded, Reason: "canary 10%: not this request"},
		},
		{
			name: "provider and model canaries: the smaller share",
			setup: func(f *fixture) {
				f.observeN("p", "m", 20, 200, 7*time.Second) // model unavailable
				f.clock.Add(time.Minute)                     // model drained: canary 10%
				f.Admit("p", "m", 0)
				f.clock.Add(5 * time.Minute) // model at 50%
				f.SetDrill("p", true)
				f.SetDrill("p", false) // provider at 10%
			},
			key:  300,
			want: Admission{Reason: "canary 10%: not this request"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, scenarioConfig())
			tt.setup(f)
			if got := f.Admit("p", "m", tt.key); got != tt.want {
				t.Errorf("Admit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDrills(t *testing.T) {
	type op struct {
		provider string
		down     bool
	}
	tests := []struct {
		name string
		ops  []op
		want map[string]bool // provider → drilled; "late" is first seen after the ops
	}{
		{name: "none", want: map[string]bool{"a": false, "b": false, "late": false}},
		{name: "one down", ops: []op{{"a", true}}, want: map[string]bool{"a": true, "b": false, "late": false}},
		{name: "down then up", ops: []op{{"a", true}, {"a", false}}, want: map[string]bool{"a": false, "b": false, "late": false}},
		{name: "all down covers providers seen later", ops: []op{{"all", true}}, want: map[string]bool{"a": true, "b": true, "late": true}},
		{name: "all up ends every drill", ops: []op{{"a", true}, {"all", true}, {"all", false}}, want: map[string]bool{"a": false, "b": false, "late": false}},
		{name: "one up during all down", ops: []op{{"all", true}, {"b", false}}, want: map[string]bool{"a": true, "b": false, "late": true}},
		{name: "one down again during all down", ops: []op{{"all", true}, {"b", false}, {"b", true}}, want: map[string]bool{"a": true, "b": true, "late": true}},
		{name: "all down again clears exemptions", ops: []op{{"all", true}, {"b", false}, {"all", true}}, want: map[string]bool{"a": true, "b": true, "late": true}},
		{name: "all up ends single drills too", ops: []op{{"b", true}, {"all", false}}, want: map[string]bool{"a": false, "b": false, "late": false}},
		{name: "up of a provider never drilled", ops: []op{{"a", false}}, want: map[string]bool{"a": false, "b": false, "late": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, scenarioConfig())
			f.Track(map[string][]string{"a": {"m"}, "b": {"m"}})
			for _, o := range tt.ops {
				f.SetDrill(o.provider, o.down)
			}
			got := map[string]bool{}
			for p := range tt.want {
				a := f.Admit(p, "m", 0)
				got[p] = !a.Allowed && a.Reason == "fault drill"
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("drilled (-want +got):\n%s", diff)
			}
			for _, p := range f.Snapshot() {
				if p.Drill != tt.want[p.Provider] {
					t.Errorf("snapshot %s: drill %v, want %v", p.Provider, p.Drill, tt.want[p.Provider])
				}
			}
		})
	}
}

func TestDrillAlertAndRecovery(t *testing.T) {
	f := newFixture(t, scenarioConfig())
	f.Track(map[string][]string{"openai": {"gpt-4o"}, "anthropic": {"claude"}})
	f.log.take()
	f.SetDrill(AllProviders, true)
	f.SetDrill(AllProviders, true) // a second "down" is no new transition
	var got []string
	for _, r := range atLeast(f.log.take(), slog.LevelWarn) {
		got = append(got, r.Level.String()+" "+r.Msg+" "+r.Attrs)
	}
	want := []string{
		"ERROR provider unavailable provider=anthropic from=healthy reason=fault drill",
		"ERROR provider unavailable provider=openai from=healthy reason=fault drill",
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("alerts (-want +got):\n%s", diff)
	}
	f.SetDrill(AllProviders, false)
	for _, p := range f.Snapshot() {
		if p.State != Healthy || p.Canary == nil || p.Canary.Share != 0.1 {
			t.Errorf("%s after the drill: %v, canary %+v; want healthy with a 10%% canary", p.Provider, p.State, p.Canary)
		}
	}
}

func TestLatencyP95(t *testing.T) {
	tests := []struct {
		name      string
		latencies int
		ttfts     int
		stream    bool
		want      time.Duration
		wantOK    bool
	}{
		{name: "unknown model", want: 0, wantOK: false},
		{name: "too few samples", latencies: 19, want: 0, wantOK: false},
		{name: "latency", latencies: 20, want: 2 * time.Second, wantOK: true},
		{name: "stream uses ttft", latencies: 20, ttfts: 20, stream: true, want: 300 * time.Millisecond, wantOK: true},
		{name: "stream without enough ttft uses latency", latencies: 20, ttfts: 5, stream: true, want: 2 * time.Second, wantOK: true},
		{name: "non-stream ignores ttft", latencies: 20, ttfts: 20, want: 2 * time.Second, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, scenarioConfig())
			for i := range tt.latencies {
				o := Observation{Provider: "p", Model: "m", Status: 200, Latency: 2 * time.Second, Quota: -1}
				if i < tt.ttfts {
					o.TTFT = 300 * time.Millisecond
				}
				f.Observe(o)
			}
			got, ok := f.LatencyP95("p", "m", tt.stream)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("LatencyP95 = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestCanceledIsIgnored(t *testing.T) {
	f := newFixture(t, scenarioConfig())
	for range 10 {
		f.Observe(Observation{Provider: "p", Model: "m", Failure: Canceled, Quota: -1})
	}
	if s := f.Snapshot(); len(s) != 0 {
		t.Errorf("snapshot after canceled attempts = %+v, want empty", s)
	}
	if got := f.Admit("p", "m", 0); !got.Allowed {
		t.Errorf("Admit after canceled attempts = %+v, want allowed", got)
	}
}
