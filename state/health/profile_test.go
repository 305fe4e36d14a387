package health

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

// TestLenientProfile: under the specification's second degradation
// profile a model at 10% errors keeps serving at half weight, where the
// default would remove it; it is removed once 15% is passed over the
// 5-minute window, and a one-minute burst alone does not remove it.
func TestLenientProfile(t *testing.T) {
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
		{name: "default: 10% errors removes", cfg: DefaultConfig(), steps: [][2]int{{45, 5}}, want: Unavailable},
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
