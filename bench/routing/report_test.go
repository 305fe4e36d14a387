package main

import (
	"math"
	"testing"
)

func TestSavedUSD(t *testing.T) {
	tests := []struct {
		name  string
		share float64
		want  float64
	}{
		{name: "all strong", share: 1, want: 0},
		{name: "all weak", share: 0, want: 1 - WeakUSDPerMTok/StrongUSDPerMTok},
		{name: "half", share: 0.5, want: 0.5 * (1 - WeakUSDPerMTok/StrongUSDPerMTok)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := savedUSD(tt.share); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("savedUSD(%v): got %v, want %v", tt.share, got, tt.want)
			}
		})
	}
}
