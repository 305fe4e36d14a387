package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestGatewayInOneFileOnly(t *testing.T) {
	t.Parallel()
	_, err := policy.Compile([]policy.File{
		{Name: "a.yaml", Data: []byte("gateway: {listen: 127.0.0.1:1}\n")},
		{Name: "b.yaml", Data: []byte("gateway: {listen: 127.0.0.1:2}\n")},
	})
	if err == nil || !strings.Contains(err.Error(), "b.yaml:1:10: gateway: the gateway section may appear in one file only") {
		t.Fatalf("err = %v", err)
	}
}

// TestHealthProfile: gateway.health.profile picks the preset the other
// keys are decoded over.
func TestHealthProfile(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "g.yaml", Data: []byte("gateway:\n  health:\n    profile: lenient\n    breaker: {open_timeout: 90s}\n")}})
	if err != nil {
		t.Fatal(err)
	}
	h := p.Gateway.Health
	if h.Profile != "lenient" || h.Window != 5*time.Minute || h.Healthy.ErrorRate != 0.05 || h.Unavailable.ErrorRate != 0.15 ||
		h.DegradedWeight != 0.5 || h.Breaker.OpenTimeout != 90*time.Second || h.Breaker.HalfOpenProbes != 2 {
		t.Errorf("lenient with a longer open breaker compiled to %+v", h)
	}
	d := policy.DefaultHealthConfig()
	if b := d.Breaker; b.ConsecutiveFailures != 5 || b.OpenTimeout != 60*time.Second || b.HalfOpenProbes != 2 {
		t.Errorf("breaker defaults %+v; the specification says 5 failures, 60 s open, 2 probes", b)
	}
	if c := d.Checks; c.Interval != 10*time.Second || c.Timeout <= 0 || c.Timeout > c.Interval {
		t.Errorf("active check defaults %+v; the specification checks idle providers every 10 s", c)
	}
}
