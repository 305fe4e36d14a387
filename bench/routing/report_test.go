package main

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/bench/routing/routellm"
	"github.com/switchyard/switchyard/bench/routing/sweep"
	"github.com/switchyard/switchyard/bench/routing/train"
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

// TestCeilings: the domain prior ranks prompts by the mean gain of the
// other prompts of their group, then by length, and is skipped for a
// benchmark without groups.
func TestCeilings(t *testing.T) {
	// item's prompt is n characters long: length breaks the prior's ties.
	item := func(group string, n int, weak, strong float64) routellm.Item {
		return routellm.Item{Prompt: strings.Repeat("x", n), Group: group, Weak: weak, Strong: strong}
	}
	tests := []struct {
		name  string
		items []routellm.Item
		// rank orders the items as the prior should, highest first; nil
		// when the benchmark has no groups.
		rank []float64
	}{
		{"the group that gains comes first", []routellm.Item{item("easy", 40, 1, 1), item("hard", 10, 0, 1), item("easy", 30, 1, 1), item("hard", 20, 0, 1)}, []float64{1, 3, 2, 4}},
		// Counted in its own group's mean, the first prompt would tie with
		// the second at 0.5 and win on length; left out, it scores 0.
		{"a prompt's own gain is left out", []routellm.Item{item("a", 10, 0, 1), item("a", 50, 1, 1), item("b", 30, 1, 1), item("b", 20, 1, 1)}, []float64{1, 4, 3, 2}},
		{"no groups", []routellm.Item{item("", 10, 0, 1), item("", 20, 1, 1)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := train.NewBenchmark(routellm.Set{Name: "synthetic", Items: tt.items})
			res := result{N: len(tt.items)}
			if err := ceilings(b, charScores(b), &res); err != nil {
				t.Fatal(err)
			}
			if res.HasGroups != (tt.rank != nil) {
				t.Fatalf("HasGroups = %v with %d ranks", res.HasGroups, len(tt.rank))
			}
			if tt.rank == nil {
				return
			}
			want := sweep.Scored{Scores: tt.rank, Outcomes: b.Outcomes()}.APGR(apgrSteps)
			if math.Abs(res.GroupPrior-want) > 1e-9 {
				t.Errorf("GroupPrior = %.4f, want %.4f (the APGR of ranking %v)", res.GroupPrior, want, tt.rank)
			}
		})
	}
}
