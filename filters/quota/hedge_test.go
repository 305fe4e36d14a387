package quota

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// TestHedgeReservation: a hedged plan reserves what both raced targets may
// bill together; a budget that cannot cover both drops the hedge before
// any target.
func TestHedgeReservation(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	plan := []filters.Target{{Model: p.Model("big")}, {Model: p.Model("small")}}
	// "hello" with max_tokens 100: big may cost 3080 µ$, small 208.
	d := demand{prompt: 8, output: 100, chat: true}
	tests := []struct {
		name        string
		hedged      bool
		limit       int64 // 0: no narrowing
		wantOK      bool
		wantAmount  int64
		wantHedge   bool
		wantReason  string
		wantTargets int
	}{
		{name: "hedged: both targets", hedged: true, wantOK: true, wantAmount: 3288, wantHedge: true, wantTargets: 2},
		{name: "not hedged: the dearest", wantOK: true, wantAmount: 3080, wantTargets: 2},
		{name: "a budget for one drops the hedge", hedged: true, limit: 3100, wantOK: true, wantAmount: 3080,
			wantReason: "; hedge dropped to fit the budget", wantTargets: 2},
		{name: "a budget for the cheap one only", hedged: true, limit: 1000, wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := &filters.Exchange{Plan: plan}
			if tt.hedged {
				x.Hedge = &filters.Hedge{After: time.Second}
			}
			f := &fit{d: d, plan: x.Plan, raced: raceOf(x)}
			ok := true
			if tt.limit > 0 {
				ok = f.narrow(tt.limit)
			}
			if ok != tt.wantOK {
				t.Fatalf("narrow: %t, want %t", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if got := f.amount(); got != tt.wantAmount {
				t.Errorf("reserved %d µ$, want %d", got, tt.wantAmount)
			}
			m, _ := newMetrics()
			f.apply(x, m, &admission{})
			if (x.Hedge != nil) != tt.wantHedge || x.RouteReason != tt.wantReason || len(x.Plan) != tt.wantTargets {
				t.Errorf("hedge %v, reason %q, %d targets; want hedge %t, reason %q, %d targets", x.Hedge, x.RouteReason, len(x.Plan), tt.wantHedge, tt.wantReason, tt.wantTargets)
			}
		})
	}
}

// TestHybridReservation: a hybrid answer reserves what every target and
// its judge may bill together.
func TestHybridReservation(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	big, small, solo := p.Model("big"), p.Model("small"), p.Model("solo")
	x := &filters.Exchange{Plan: []filters.Target{{Model: big}, {Model: small}}, Hybrid: &filters.Hybrid{Judge: solo}}
	d := demand{prompt: 8, output: 100, chat: true}
	f := &fit{d: d, plan: x.Plan, raced: raceOf(x), judge: solo}
	// big 3080 + small 208; the judge (solo, 1 and 2 $/Mtok) reads the
	// prompt, both answers' caps and its instructions, 8+100+100+200
	// tokens, and writes 16: 408 + 32 µ$.
	if got, want := f.amount(), int64(3080+208+408+32); got != want {
		t.Errorf("reserved %d µ$, want %d", got, want)
	}
	if !f.narrow(3100) || f.amount() != 3080 {
		t.Fatalf("a budget for one target: narrowed to %d µ$", f.amount())
	}
	m, _ := newMetrics()
	f.apply(x, m, &admission{})
	if x.Hybrid != nil || x.RouteReason != "; hybrid dropped to fit the budget: one model at a time" {
		t.Errorf("hybrid %v, reason %q", x.Hybrid, x.RouteReason)
	}
}
