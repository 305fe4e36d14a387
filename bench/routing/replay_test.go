package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/bench/routing/routellm"
	"github.com/switchyard/switchyard/bench/routing/sweep"
	"github.com/switchyard/switchyard/filters/router/complexity"
)

// TestReplayApps: each MMLU subject and MT-Bench category is an app of
// its own under a system prompt of its own; GSM8K is one app.
func TestReplayApps(t *testing.T) {
	sets, err := routellm.Load("testdata/routellm")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{routellm.MTBench: 8, routellm.GSM8K: 1, routellm.MMLU: 57}
	for _, set := range sets {
		apps, appOf := replayApps(set.Clean())
		names, systems := map[string]bool{}, map[string]bool{}
		for _, a := range apps {
			names[a.Name], systems[a.System] = true, true
		}
		if len(apps) != want[set.Name] || len(names) != len(apps) || len(systems) != len(apps) {
			t.Errorf("%s: %d apps, %d names, %d system prompts; want %d of each", set.Name, len(apps), len(names), len(systems), want[set.Name])
		}
		for i, it := range set.Clean().Items {
			if got := apps[appOf[i]].Name; got != appName(set.Name, it.Group) {
				t.Fatalf("%s item %d of group %q is sent by app %q", set.Name, i, it.Group, got)
			}
		}
	}
}

// learningSet is two apps sending the same prompts: on one the weak
// model fails wherever the strong one succeeds, on the other it never
// does. The classifier cannot tell them apart; their verdicts can.
func learningSet() routellm.Set {
	set := routellm.Set{Name: "synthetic"}
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("compute the integral of the function prove that every bounded sequence has a convergent subsequence explain why")
	for i := range 1500 {
		var b strings.Builder
		for range 5 + rng.IntN(60) {
			b.WriteString(words[rng.IntN(len(words))] + " ")
		}
		prompt := fmt.Sprintf("%sQuestion %d?", b.String(), i)
		set.Items = append(set.Items,
			routellm.Item{Prompt: prompt, Group: "hard", Weak: 0, Strong: 1},
			routellm.Item{Prompt: prompt, Group: "easy", Weak: 1, Strong: 1})
	}
	return set
}

// TestReplayLearnsOnlyFromVerdicts: without verdicts the router ranks by
// the classifier's score alone; with a judge it learns, through the
// learner's real Rate and Refresh, to send the hard app's requests to
// the strong model before the easy app's, and in the second half ranks
// far better than the classifier alone.
func TestReplayLearnsOnlyFromVerdicts(t *testing.T) {
	m, err := complexity.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	set := learningSet()
	rp := newReplayer(set, m)
	order := rand.New(rand.NewPCG(3, 4)).Perm(len(set.Items))
	tests := []struct {
		name  string
		judge float64
		// wantGain is the least the learner's second-half APGR must beat
		// the classifier's by; wantShifted whether any score moved.
		wantGain    float64
		wantShifted bool
	}{
		{name: "no judge", judge: 0, wantGain: 0, wantShifted: false},
		{name: "judge at 10 %", judge: 0.10, wantGain: 0.2, wantShifted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, err := rp.run(order, replayRun{Routing: routingDefault, Judge: tt.judge}, 7)
			if err != nil {
				t.Fatal(err)
			}
			if (run.Verdicts > 0) != (tt.judge > 0) {
				t.Errorf("%d verdicts at a judge of %v", run.Verdicts, tt.judge)
			}
			// The shift each app's requests got in the second half.
			shift := map[string]float64{}
			shifted := false
			for n, i := range order {
				d := run.Ranked[n] - run.Raw[n]
				shifted = shifted || d != 0
				if n >= len(order)/2 {
					shift[set.Items[i].Group] += d
				}
			}
			if shifted != tt.wantShifted {
				t.Fatalf("scores shifted: %v, want %v", shifted, tt.wantShifted)
			}
			if tt.wantShifted && !(shift["hard"] > 0 && shift["easy"] < 0) {
				t.Errorf("second-half shifts: hard %+.2f, easy %+.2f; want the hard app up and the easy one down", shift["hard"], shift["easy"])
			}
			learnt := figures(run, run.Ranked, run.Strong, run.Bought, secondHalf)
			alone := figures(run, run.Raw, atDefault(run.Raw), 0, secondHalf)
			if gain := learnt.apgr - alone.apgr; gain < tt.wantGain-1e-9 || (!tt.wantShifted && gain != 0) {
				t.Errorf("second-half APGR %.3f, classifier alone %.3f: gain %+.3f, want at least %+.3f", learnt.apgr, alone.apgr, gain, tt.wantGain)
			}
		})
	}
}

// TestWindows: the quality of each window of replayWindow requests after
// the first, at the decisions taken.
func TestWindows(t *testing.T) {
	// outcomes: the first window all lost to the weak model, the second
	// lost on 10 %, the third on 2 %.
	outcomes := make([]sweep.Outcome, 3*replayWindow)
	strong := make([]bool, len(outcomes))
	for i := range outcomes {
		outcomes[i] = sweep.Outcome{Weak: 1, Strong: 1}
		w, k := i/replayWindow, i%replayWindow
		if w == 0 || (w == 1 && k < replayWindow/10) || (w == 2 && k < replayWindow/50) {
			outcomes[i].Weak = 0
		}
	}
	tests := []struct {
		name      string
		n         int
		wantWorst float64
		wantMet   bool
	}{
		{name: "the first window does not count", n: 3 * replayWindow, wantWorst: 0.90, wantMet: false},
		{name: "a short replay has no window", n: replayWindow + replayWindow/2, wantWorst: 1, wantMet: true},
		{name: "one window at 98 %", n: 3 * replayWindow, wantWorst: 0.98, wantMet: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, s := outcomes[:tt.n], strong[:tt.n]
			if i == 2 {
				// The second window's losses served by the strong model.
				s = append([]bool(nil), s...)
				for k := replayWindow; k < replayWindow+replayWindow/10; k++ {
					s[k] = true
				}
			}
			worst, met := windows(o, s)
			if math.Abs(worst-tt.wantWorst) > 1e-9 || met != tt.wantMet {
				t.Errorf("windows: worst %.3f met %v; want %.3f %v", worst, met, tt.wantWorst, tt.wantMet)
			}
		})
	}
}

// TestHalf: the scored half's requests, an odd middle one in the second.
func TestHalf(t *testing.T) {
	tests := []struct {
		name           string
		h              half
		n              int
		wantLo, wantHi int
	}{
		{name: "second of 10", h: secondHalf, n: 10, wantLo: 5, wantHi: 10},
		{name: "first of 10", h: firstHalf, n: 10, wantLo: 0, wantHi: 5},
		{name: "second of 11", h: secondHalf, n: 11, wantLo: 5, wantHi: 11},
		{name: "first of 11", h: firstHalf, n: 11, wantLo: 0, wantHi: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if lo, hi := tt.h.of(tt.n); lo != tt.wantLo || hi != tt.wantHi {
				t.Errorf("%s half of %d: [%d, %d), want [%d, %d)", tt.h, tt.n, lo, hi, tt.wantLo, tt.wantHi)
			}
		})
	}
}

func TestPercentile95(t *testing.T) {
	tests := []struct {
		name           string
		n              int
		wantLo, wantHi float64
	}{
		{name: "1000 values", n: 1000, wantLo: 25, wantHi: 974},
		{name: "100 values", n: 100, wantLo: 2, wantHi: 97},
		{name: "10 values: the extremes", n: 10, wantLo: 0, wantHi: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := make([]float64, tt.n)
			for i := range vals {
				vals[i] = float64(tt.n - 1 - i)
			}
			if lo, hi := percentile95(vals); lo != tt.wantLo || hi != tt.wantHi {
				t.Errorf("percentile95 of 0..%d: [%v, %v], want [%v, %v]", tt.n-1, lo, hi, tt.wantLo, tt.wantHi)
			}
		})
	}
}

// TestReplayVerdict: the report says a target is met only when each
// replay meets it.
func TestReplayVerdict(t *testing.T) {
	mmlu := func(judge, apgr float64) replayResult {
		return replayResult{Name: "MMLU", Judge: judge, APGR: interval{apgr, apgr - 0.01, apgr + 0.01}, Met: replayOrders}
	}
	tests := []struct {
		name    string
		half    half
		replays []replayResult
		want    []string
		wantNot []string
	}{
		{"all met", secondHalf, []replayResult{mmlu(0.02, 0.63), mmlu(0.10, 0.66)}, []string{"against 0.65: **yes**", "against 0.62: **yes**", "after the first 500: **yes**"}, nil},
		{"2 % short", secondHalf, []replayResult{mmlu(0.02, 0.61), mmlu(0.10, 0.66)}, []string{"against 0.62: **no**", "against 0.65: **yes**"}, nil},
		{"one replay dipped in a window", secondHalf, []replayResult{mmlu(0.02, 0.63), func() replayResult { r := mmlu(0.10, 0.66); r.Met = replayOrders - 1; return r }()}, []string{"after the first 500: **no**"}, nil},
		{"not run", secondHalf, nil, []string{"at a 10 % judge not run"}, nil},
		{"first halves judge nothing", firstHalf, []replayResult{mmlu(0.02, 0.63), mmlu(0.10, 0.66)}, []string{"no verdict"}, []string{"**yes**", "**no**"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replayReport{Half: tt.half, Replays: tt.replays}.verdict()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("verdict lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("verdict holds %q:\n%s", w, got)
				}
			}
		})
	}
}
