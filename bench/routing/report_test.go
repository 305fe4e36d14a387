package main

import (
	"fmt"
	"math"
	"strings"
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

// TestVerdicts: the report says a target is met only when every benchmark
// meets it, and "beats length" only when the paired interval is above 0.
func TestVerdicts(t *testing.T) {
	good := result{Name: "A", APGR: interval{0.7, 0.66, 0.74}, Gap: interval{0.05, 0.01, 0.09}, DefaultHeld: operating{Met: true}}
	tests := []struct {
		name    string
		results []result
		want    string
	}{
		{"all met", []result{good, good}, "every benchmark: **yes**; beats longest-prompt-first on every benchmark (the difference's interval above 0): **yes**;"},
		{"one low APGR", []result{good, func() result { r := good; r.APGR.Est = 0.6; return r }()}, "APGR ≥ 0.65 on every benchmark: **no**"},
		{"a gap whose interval holds 0", []result{good, func() result { r := good; r.Gap.Lo = -0.01; return r }()}, "above 0): **no**"},
		{"quality missed at the default", []result{func() result { r := good; r.DefaultHeld.Met = false; return r }(), good}, "at the shipped default on every benchmark: **no**"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			report{Results: tt.results}.renderTruth(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
			if !strings.Contains(b.String(), tt.want) {
				t.Errorf("report lacks %q:\n%s", tt.want, b.String())
			}
		})
	}
}
