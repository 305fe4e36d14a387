package server

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// TestProviderTimed: a failed attempt that ended at the per-try timeout is
// the provider's only when the provider itself had (nearly) all of it.
func TestProviderTimed(t *testing.T) {
	t0 := time.Unix(1000, 0)
	x := &filters.Exchange{Route: &policy.Route{PerTryIdleTimeout: 10 * time.Second}}
	tests := []struct {
		name      string
		sentAfter time.Duration // 0: never sent
		endAfter  time.Duration
		want      filters.Cause
	}{
		{"refused at once", time.Millisecond, 2 * time.Millisecond, filters.CauseConnect},
		{"refused before ext_proc answered", 0, time.Millisecond, filters.CauseConnect},
		{"silent for the whole timeout", time.Millisecond, 10 * time.Second, filters.CauseTimeout},
		{"timed out while ext_proc held the request", 4 * time.Second, 10 * time.Second, filters.CauseExcused},
		{"timed out before ext_proc answered", 0, 10 * time.Second, filters.CauseExcused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &filters.Attempt{Started: t0}
			if tt.sentAfter > 0 {
				a.Sent = t0.Add(tt.sentAfter)
			}
			if got := providerTimed(x, a, t0.Add(tt.endAfter)); got != tt.want {
				t.Errorf("cause %v, want %v", got, tt.want)
			}
		})
	}
}
