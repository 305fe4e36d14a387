package sweep

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// tiny is a hand-made benchmark of four prompts. All-weak quality is
// (0+1+0+1)/4 = 0.5, all-strong (1+1+1+0)/4 = 0.75.
var tiny = Scored{
	Scores:   []float64{0.9, 0.5, 0.7, 0.1},
	Outcomes: []Outcome{{Weak: 0, Strong: 1}, {Weak: 1, Strong: 1}, {Weak: 0, Strong: 1}, {Weak: 1, Strong: 0}},
}

var approx = cmpopts.EquateApprox(0, 1e-12)

func TestCurve(t *testing.T) {
	// Sending prompts in score order 0, 2, 1, 3 gains +1, +1, 0, −1.
	want := []Point{
		{Threshold: math.Inf(1), Share: 0, Quality: 0.5},
		{Threshold: 0.9, Share: 0.25, Quality: 0.75},
		{Threshold: 0.7, Share: 0.5, Quality: 1},
		{Threshold: 0.5, Share: 0.75, Quality: 1},
		{Threshold: 0.1, Share: 1, Quality: 0.75},
	}
	if diff := cmp.Diff(want, tiny.Curve(), approx); diff != "" {
		t.Errorf("Curve mismatch (-want +got):\n%s", diff)
	}
}

func TestCurveTies(t *testing.T) {
	tied := Scored{Scores: []float64{1, 1, 0}, Outcomes: []Outcome{{0, 1}, {1, 0}, {0, 1}}}
	want := []Point{
		{Threshold: math.Inf(1), Share: 0, Quality: 1.0 / 3},
		{Threshold: 1, Share: 2.0 / 3, Quality: 1.0 / 3},
		{Threshold: 0, Share: 1, Quality: 2.0 / 3},
	}
	if diff := cmp.Diff(want, tied.Curve(), approx); diff != "" {
		t.Errorf("tied prompts must move together (-want +got):\n%s", diff)
	}
}

func TestCheapest(t *testing.T) {
	tests := []struct {
		name      string
		frac      float64
		wantShare float64
		wantOK    bool
	}{
		// 95 % of 0.75 is 0.7125: one strong call (quality 0.75) is enough.
		{name: "95 percent", frac: 0.95, wantShare: 0.25, wantOK: true},
		{name: "all-strong quality", frac: 1, wantShare: 0.25, wantOK: true},
		{name: "better than strong", frac: 4.0 / 3, wantShare: 0.5, wantOK: true},
		{name: "unreachable", frac: 1.5, wantOK: false},
		{name: "weak is enough", frac: 0.5, wantShare: 0, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := Cheapest(tiny.Curve(), tiny.Target(tt.frac))
			if ok != tt.wantOK || (ok && math.Abs(p.Share-tt.wantShare) > 1e-12) {
				t.Errorf("got share %v, ok %v; want %v, %v", p.Share, ok, tt.wantShare, tt.wantOK)
			}
		})
	}
}

func TestAt(t *testing.T) {
	tests := []struct {
		name      string
		threshold float64
		want      Point
	}{
		{name: "none strong", threshold: math.Inf(1), want: Point{Threshold: math.Inf(1), Share: 0, Quality: 0.5}},
		{name: "between scores", threshold: 0.6, want: Point{Threshold: 0.6, Share: 0.5, Quality: 1}},
		{name: "all strong", threshold: 0, want: Point{Threshold: 0, Share: 1, Quality: 0.75}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tiny.At(tt.threshold), approx); diff != "" {
				t.Errorf("At(%v) mismatch (-want +got):\n%s", tt.threshold, diff)
			}
		})
	}
}

func TestQualityAt(t *testing.T) {
	tests := []struct {
		name  string
		share float64
		want  float64
	}{
		{name: "nothing", share: 0, want: 0.5},
		{name: "between points keeps the cheaper", share: 0.4, want: 0.75},
		{name: "exact point", share: 0.5, want: 1},
		{name: "everything", share: 1, want: 0.75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QualityAt(tiny.Curve(), tt.share); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("QualityAt(%v): got %v, want %v", tt.share, got, tt.want)
			}
		})
	}
}

func TestTransfer(t *testing.T) {
	// other needs its two top prompts strong to reach 95 % (0.95·1 = 0.95):
	// scores 0.8 and 0.6 both gain 1; all-weak 0, all-strong 1.
	other := Scored{Scores: []float64{0.8, 0.6, 0.2}, Outcomes: []Outcome{{0, 1}, {0, 1}, {1, 1}}}
	tests := []struct {
		name  string
		train []Scored
		frac  float64
		want  float64
	}{
		{name: "one benchmark", train: []Scored{tiny}, frac: 0.95, want: 0.9},
		{name: "every benchmark must reach the bar", train: []Scored{tiny, other}, frac: 0.95, want: 0.6},
		{name: "nothing reaches it", train: []Scored{tiny}, frac: 2, want: math.Inf(-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Transfer(tt.train, tt.frac); got != tt.want {
				t.Errorf("got threshold %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRandom(t *testing.T) {
	// (0.95·0.75 − 0.5)/(0.75 − 0.5) = 0.85.
	if got := tiny.RandomShare(0.95); math.Abs(got-0.85) > 1e-12 {
		t.Errorf("RandomShare: got %v, want 0.85", got)
	}
	if got := tiny.RandomAt(0.85).Quality; math.Abs(got-0.7125) > 1e-12 {
		t.Errorf("RandomAt(0.85).Quality: got %v, want 0.7125", got)
	}
}

func TestAPGR(t *testing.T) {
	outcomes := []Outcome{{0, 1}, {0, 1}, {1, 1}, {1, 1}}
	tests := []struct {
		name   string
		scores []float64
		want   float64
	}{
		// The two prompts the strong model alone gets right come first:
		// the gap is closed at share 0.5 and stays closed.
		{"oracle order", []float64{4, 3, 2, 1}, (0 + 0.5 + 1 + 1 + 1) / 5},
		// They come last: nothing is recovered before share 0.75.
		{"worst order", []float64{1, 2, 3, 4}, (0 + 0 + 0 + 0.5 + 1) / 5},
		// All tied: nothing until everything is strong.
		{"ties", []float64{1, 1, 1, 1}, 1.0 / 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Scored{Scores: tt.scores, Outcomes: outcomes}).APGR(4); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("APGR = %v, want %v", got, tt.want)
			}
		})
	}
	if got := (Scored{Scores: []float64{1, 2}, Outcomes: []Outcome{{1, 1}, {0, 0}}}).APGR(4); got != 0 {
		t.Errorf("equal models: APGR = %v, want 0", got)
	}
}

func TestResample(t *testing.T) {
	s := Scored{Scores: []float64{1, 2, 3}, Outcomes: []Outcome{{0, 1}, {1, 0}, {1, 1}}}
	picks := []int{2, 2, 0}
	i := 0
	r := s.Resample(func(n int) int { p := picks[i]; i++; return p })
	want := Scored{Scores: []float64{3, 3, 1}, Outcomes: []Outcome{{1, 1}, {1, 1}, {0, 1}}}
	if !cmp.Equal(r, want) {
		t.Errorf("got %v, want %v", r, want)
	}
}
