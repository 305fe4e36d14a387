package health

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

// TestProfiles: under the quick profile a model at 10% errors is removed
// (the default keeps it at half weight: TestSeedLevels); under the
// lenient profile it is removed once 15% is passed over the 5-minute
// window, and a one-minute burst alone does not remove it.
func TestProfiles(t *testing.T) {
	lenient, ok := policy.HealthProfile("lenient")
	if !ok {
		t.Fatal("no lenient profile")
	}
	for _, tc := range []struct {
		name       string
		cfg        Config
		steps      [][2]int // per minute: ok, failed
		want       State
		wantWeight float64
	}{
		{name: "quick: 10% errors removes", cfg: quickConfig(), steps: [][2]int{{45, 5}}, want: Unavailable},
		{name: "lenient: 3% errors is healthy", cfg: lenient, steps: [][2]int{{97, 3}}, want: Healthy, wantWeight: 1},
		{name: "lenient: 10% errors halves the weight", cfg: lenient, steps: [][2]int{{45, 5}, {45, 5}, {45, 5}}, want: Degraded, wantWeight: 0.5},
		{name: "lenient: a minute at 40% among four good ones stays", cfg: lenient, steps: [][2]int{{50, 0}, {50, 0}, {50, 0}, {50, 0}, {30, 20}}, want: Degraded, wantWeight: 0.5},
		{name: "lenient: 20% for five minutes removes", cfg: lenient, steps: [][2]int{{40, 10}, {40, 10}, {40, 10}, {40, 10}, {40, 10}}, want: Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Breaker.ConsecutiveFailures, cfg.Breaker.FailureRatio = 0, 0 // the window alone decides
			f := newFixture(t, cfg)
			f.Track(map[string][]string{"openai": {"gpt-4o"}})
			for _, s := range tc.steps {
				for i := range s[0] + s[1] {
					status := 200
					if i%(s[0]+s[1]) < s[1] {
						status = 503
					}
					f.Observe(Observation{Provider: "openai", Model: "gpt-4o", Status: status, Latency: 100 * time.Millisecond, Quota: -1})
				}
				f.clock.Add(time.Minute - time.Second)
			}
			if got := f.model(t, "openai", "gpt-4o"); got.State != tc.want {
				t.Fatalf("state %v (%s), want %v", got.State, got.Reason, tc.want)
			}
			if tc.want == Unavailable {
				return
			}
			if a := f.Admit("openai", "gpt-4o", 1); !a.Allowed || a.Weight != tc.wantWeight {
				t.Errorf("admission %+v, want allowed at weight %v", a, tc.wantWeight)
			}
		})
	}
}

// TestSeedLevels: the default is the seed's degradation levels. At 10%
// errors a model is degraded, serving at half weight (level 1); above 15%
// it stays degraded, the reason saying for how long, until that has held
// five minutes, when it is removed with the alert (level 2). A dip below
// 15% starts the five minutes again.
func TestSeedLevels(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Breaker.ConsecutiveFailures, cfg.Breaker.FailureRatio = 0, 0 // the window alone decides
	f := newFixture(t, cfg)
	f.Track(map[string][]string{"openai": {"gpt-4o"}})
	// every 10 s, ten attempts of which failed fail.
	tick := func(failed int) {
		for i := range 10 {
			status := 200
			if i < failed {
				status = 503
			}
			f.Observe(Observation{Provider: "openai", Model: "gpt-4o", Status: status, Latency: 100 * time.Millisecond, Quota: -1})
		}
		f.clock.Add(10 * time.Second)
	}
	expect := func(what string, want State, wantReason string) {
		t.Helper()
		got := f.model(t, "openai", "gpt-4o")
		if got.State != want || !strings.HasPrefix(got.Reason, wantReason) {
			t.Fatalf("%s: %v (%s), want %v (%s…)", what, got.State, got.Reason, want, wantReason)
		}
	}
	for range 6 {
		tick(1)
	}
	expect("10% errors", Degraded, "error rate 10% ≥ 5%")
	if a := f.Admit("openai", "gpt-4o", 1); !a.Allowed || a.Weight != 0.5 {
		t.Fatalf("degraded admission %+v, want half weight", a)
	}
	for range 6 {
		tick(3)
	}
	expect("a minute at 30%", Degraded, "error rate 30% > 15% for ")
	tick(0)
	tick(0)
	tick(0)
	expect("below 15% again", Degraded, "error rate ")
	// The window holds the good minute for a few ticks more; from the
	// first tick past 15%, removal takes five minutes of ticks.
	over := -1
	for i := range 40 {
		tick(3)
		got := f.model(t, "openai", "gpt-4o")
		if over < 0 && strings.Contains(got.Reason, " for ") {
			over = i
		}
		if got.State == Unavailable {
			if over < 0 || i-over < 29 || i-over > 31 {
				t.Fatalf("removed at tick %d, over 15%% since tick %d: want five minutes later", i, over)
			}
			break
		}
		if i == 39 {
			t.Fatalf("never removed: %v (%s)", got.State, got.Reason)
		}
	}
	expect("30% for five minutes", Unavailable, "error rate 30% > 15%")
	var alerts int
	for _, r := range f.log.take() {
		if r.Msg == "model unavailable" {
			alerts++
		}
	}
	if alerts != 1 {
		t.Errorf("%d unavailable alerts, want 1", alerts)
	}
}
