package health

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReconfigureKeepsState(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(f *fixture)
		change func(c *Config)
		wait   time.Duration // after the reload
		check  func(t *testing.T, f *fixture)
	}{
		{
			name:   "looser p99 bound turns the same samples healthy",
			setup:  func(f *fixture) { f.observeN("p", "m", 20, 200, 4*time.Second) },
			change: func(c *Config) { c.Healthy.P99 = 5 * time.Second },
			check: func(t *testing.T, f *fixture) {
				if got := f.model(t, "p", "m"); got.State != Healthy || got.Stats.LatencySamples != 20 {
					t.Errorf("model %v with %d samples, want healthy with 20", got.State, got.Stats.LatencySamples)
				}
			},
		},
		{
			name:   "stricter error bound turns the same samples unavailable",
			setup:  func(f *fixture) { f.observeN("p", "m", 97, 200, 0); f.observeN("p", "m", 3, 500, 0) },
			change: func(c *Config) { c.Healthy.ErrorRate, c.Unavailable.ErrorRate = 0.005, 0.02 },
			check: func(t *testing.T, f *fixture) {
				if got := f.model(t, "p", "m"); got.State != Unavailable || got.Reason != "error rate 3% > 2%" {
					t.Errorf("model %v %q, want unavailable \"error rate 3%% > 2%%\"", got.State, got.Reason)
				}
			},
		},
		{
			name: "a longer window keeps the samples",
			setup: func(f *fixture) {
				f.observeN("p", "m", 10, 500, 0)
				f.clock.Add(30 * time.Second)
				f.observeN("p", "m", 10, 200, 0)
			},
			change: func(c *Config) { c.Window, c.Buckets = 5*time.Minute, 5 },
			wait:   2 * time.Minute,
			check: func(t *testing.T, f *fixture) {
				if got := f.model(t, "p", "m").Stats; got.Requests != 20 || got.Errors != 10 {
					t.Errorf("window holds %d requests, %d errors; want 20, 10", got.Requests, got.Errors)
				}
			},
		},
		{
			name:   "an open breaker stays open and follows the new timeout",
			setup:  func(f *fixture) { f.observeN("p", "m", 5, 500, 0) },
			change: func(c *Config) { c.Breaker.OpenTimeout = 10 * time.Second },
			wait:   10 * time.Second,
			check: func(t *testing.T, f *fixture) {
				b := f.providerStatus(t, "p").Breaker
				if b.State != BreakerHalfOpen || b.Reason != "5 consecutive failures" {
					t.Errorf("breaker %v %q, want half_open after 5 consecutive failures", b.State, b.Reason)
				}
			},
		},
		{
			name:   "fewer consecutive failures trip on the next one",
			setup:  func(f *fixture) { f.observeN("p", "m", 3, 500, 0) },
			change: func(c *Config) { c.Breaker.ConsecutiveFailures = 3 },
			check: func(t *testing.T, f *fixture) {
				f.observeN("p", "m", 1, 500, 0)
				if b := f.providerStatus(t, "p").Breaker; b.State != BreakerOpen || b.Reason != "4 consecutive failures" {
					t.Errorf("breaker %v %q, want open after 4 consecutive failures", b.State, b.Reason)
				}
			},
		},
		{
			name: "fewer probes close a half-open breaker that has enough successes",
			setup: func(f *fixture) {
				f.observeN("p", "m", 5, 500, 0)
				f.clock.Add(30 * time.Second)
				for key := range uint64(2) {
					f.Admit("p", "m", key)
					f.Observe(Observation{Provider: "p", Model: "m", Status: 200, Quota: -1, Key: key})
				}
			},
			change: func(c *Config) { c.Breaker.HalfOpenProbes = 2 },
			check: func(t *testing.T, f *fixture) {
				if b := f.providerStatus(t, "p").Breaker; b.State != BreakerClosed {
					t.Errorf("breaker %v, want closed", b.State)
				}
			},
		},
		{
			name: "a canary keeps its step",
			setup: func(f *fixture) {
				f.SetDrill("p", true)
				f.SetDrill("p", false)
				f.clock.Add(5 * time.Minute)
				f.Admit("p", "m", 0)
			},
			change: func(c *Config) { c.Recovery.Steps = []float64{0.2, 0.6, 0.9} },
			check: func(t *testing.T, f *fixture) {
				if c := f.providerStatus(t, "p").Canary; c == nil || c.Step != 1 || c.Share != 0.6 {
					t.Errorf("canary %+v, want step 1 at 60%%", c)
				}
			},
		},
		{
			name: "a canary whose step is now full traffic ends",
			setup: func(f *fixture) {
				f.SetDrill("p", true)
				f.SetDrill("p", false)
				f.clock.Add(5 * time.Minute)
				f.Admit("p", "m", 0)
			},
			change: func(c *Config) { c.Recovery.Steps = []float64{0.5, 1} },
			check: func(t *testing.T, f *fixture) {
				if c := f.providerStatus(t, "p").Canary; c != nil {
					t.Errorf("canary %+v, want none", c)
				}
			},
		},
		{
			name:   "drills survive",
			setup:  func(f *fixture) { f.SetDrill("p", true) },
			change: func(c *Config) { c.MinSamples = 5 },
			check: func(t *testing.T, f *fixture) {
				if a := f.Admit("p", "m", 0); a.Allowed || a.Reason != "fault drill" {
					t.Errorf("Admit = %+v, want refused by the drill", a)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, scenarioConfig())
			tt.setup(f)
			c := scenarioConfig()
			tt.change(&c)
			if err := f.Reconfigure(c); err != nil {
				t.Fatalf("Reconfigure: %v", err)
			}
			f.clock.Add(tt.wait)
			tt.check(t, f)
		})
	}
}

func TestReconfigureRefusesInvalid(t *testing.T) {
	f := newFixture(t, scenarioConfig())
	f.observeN("p", "m", 20, 200, 4*time.Second)
	bad := scenarioConfig()
	bad.Healthy.P99 = 5 * time.Second
	bad.Buckets = 0
	if err := f.Reconfigure(bad); err == nil {
		t.Fatal("Reconfigure(invalid) = nil, want an error")
	}
	if got := f.model(t, "p", "m").State; got != Degraded {
		t.Errorf("state after a refused reload = %v, want degraded (old thresholds)", got)
	}
}

func TestNewRefusesInvalid(t *testing.T) {
	c := scenarioConfig()
	c.Window = 0
	if _, err := New(c, nil, nil); err == nil {
		t.Fatal("New(invalid) = nil error, want one")
	}
}

func TestNewDefaults(t *testing.T) {
	m, err := New(scenarioConfig(), nil, nil) // system clock, no log
	if err != nil {
		t.Fatal(err)
	}
	m.SetDrill("p", true)
	if a := m.Admit("p", "m", 0); a.Allowed || a.Reason != "fault drill" {
		t.Errorf("Admit = %+v, want refused by the drill", a)
	}
}

func TestTrack(t *testing.T) {
	f := newFixture(t, scenarioConfig())
	f.Track(map[string][]string{"a": {"x", "y"}, "b": {"z"}})
	f.observeN("a", "x", 1, 200, 0)
	f.Track(map[string][]string{"a": {"x"}, "c": {"w"}})
	var got []string
	for _, p := range f.Snapshot() {
		for _, m := range p.Models {
			got = append(got, p.Provider+"/"+m.Model)
		}
	}
	if diff := cmp.Diff([]string{"a/x", "c/w"}, got); diff != "" {
		t.Errorf("tracked (-want +got):\n%s", diff)
	}
	if n := f.model(t, "a", "x").Stats.Requests; n != 1 {
		t.Errorf("a/x kept %d requests, want 1", n)
	}
}
