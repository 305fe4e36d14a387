package health

import (
	"testing"
	"time"
)

func TestBreakerTransitions(t *testing.T) {
	// An op acts on the breaker after the clock moved by wait; want is the
	// state afterwards, wantProbe what a "probe" op returned.
	type op struct {
		wait      time.Duration
		do        string // "ok", "fail", "probe", "trip", "tick"
		key       uint64
		want      BreakerState
		wantProbe bool
	}
	repeat := func(n int, o op) []op {
		out := make([]op, n)
		for i := range out {
			out[i] = o
		}
		return out
	}
	seq := func(parts ...[]op) []op {
		var out []op
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	open5 := repeat(4, op{do: "fail", want: BreakerClosed})
	open5 = append(open5, op{do: "fail", want: BreakerOpen})
	halfOpen := []op{{wait: 30 * time.Second, do: "tick", want: BreakerHalfOpen}}

	tests := []struct {
		name       string
		change     func(*BreakerConfig)
		ops        []op
		wantReason string
	}{
		{name: "closed stays closed on successes", ops: repeat(100, op{do: "ok", want: BreakerClosed})},
		{name: "closed to open on 5 consecutive failures", ops: open5, wantReason: "5 consecutive failures"},
		{
			name: "a success breaks the run",
			ops: seq(repeat(4, op{do: "fail", want: BreakerClosed}), []op{{do: "ok", want: BreakerClosed}},
				repeat(4, op{do: "fail", want: BreakerClosed})),
		},
		{
			name:   "failure ratio over the minimum of requests",
			change: func(c *BreakerConfig) { c.ConsecutiveFailures = 0 },
			ops: seq(repeat(10, op{do: "ok", want: BreakerClosed}), repeat(9, op{do: "fail", want: BreakerClosed}),
				[]op{{do: "fail", want: BreakerOpen}}),
			wantReason: "10 of 20 attempts failed",
		},
		{
			name:   "failure ratio not applied below the minimum",
			change: func(c *BreakerConfig) { c.ConsecutiveFailures = 0 },
			ops:    seq([]op{{do: "ok", want: BreakerClosed}}, repeat(18, op{do: "fail", want: BreakerClosed})),
		},
		{
			name: "interval on the injected clock clears the counts",
			ops: seq(repeat(4, op{do: "fail", want: BreakerClosed}),
				[]op{{wait: 60 * time.Second, do: "fail", want: BreakerClosed}},
				repeat(3, op{do: "fail", want: BreakerClosed})),
		},
		{
			name:   "no interval keeps counting",
			change: func(c *BreakerConfig) { c.Interval = 0 },
			ops: seq(repeat(4, op{do: "fail", want: BreakerClosed}),
				[]op{{wait: time.Hour, do: "fail", want: BreakerOpen}}),
			wantReason: "5 consecutive failures",
		},
		{
			name: "open stays open until the timeout",
			ops: seq(open5, []op{
				{wait: 29*time.Second + 999*time.Millisecond, do: "tick", want: BreakerOpen},
				{do: "probe", key: 1, want: BreakerOpen, wantProbe: false},
				{wait: time.Millisecond, do: "tick", want: BreakerHalfOpen},
			}),
			wantReason: "5 consecutive failures",
		},
		{
			name: "results while open are ignored",
			ops: seq(open5, repeat(10, op{do: "ok", want: BreakerOpen}), []op{
				{wait: 30 * time.Second, do: "tick", want: BreakerHalfOpen},
			}),
			wantReason: "5 consecutive failures",
		},
		{
			name: "half-open to closed after 3 probe successes",
			ops: seq(open5, halfOpen, []op{
				{do: "probe", key: 1, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 2, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 3, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 4, want: BreakerHalfOpen, wantProbe: false},
				{do: "probe", key: 2, want: BreakerHalfOpen, wantProbe: true}, // same request, same slot
				{do: "ok", key: 1, want: BreakerHalfOpen},
				{do: "ok", key: 2, want: BreakerHalfOpen},
				{do: "ok", key: 3, want: BreakerClosed},
			}),
		},
		{
			name: "half-open back to open on a probe failure",
			ops: seq(open5, halfOpen, []op{
				{do: "probe", key: 1, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 2, want: BreakerHalfOpen, wantProbe: true},
				{do: "ok", key: 1, want: BreakerHalfOpen},
				{do: "fail", key: 2, want: BreakerOpen},
				{wait: 29 * time.Second, do: "tick", want: BreakerOpen},
				{wait: time.Second, do: "tick", want: BreakerHalfOpen},
			}),
			wantReason: "probe failed",
		},
		{
			name: "a result without a slot does not count",
			ops: seq(open5, halfOpen, []op{
				{do: "ok", key: 9, want: BreakerHalfOpen},
				{do: "fail", key: 9, want: BreakerHalfOpen},
			}),
			wantReason: "5 consecutive failures",
		},
		{
			name: "a result of an unknown key settles the oldest slot",
			ops: seq(open5, halfOpen, []op{
				{do: "probe", key: 1, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 2, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 3, want: BreakerHalfOpen, wantProbe: true},
				{do: "ok", key: 0, want: BreakerHalfOpen},
				{do: "ok", key: 0, want: BreakerHalfOpen},
				{do: "ok", key: 0, want: BreakerClosed},
			}),
		},
		{
			name: "a slot without a result comes back after the probe timeout",
			ops: seq(open5, halfOpen, []op{
				{do: "probe", key: 1, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 2, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 3, want: BreakerHalfOpen, wantProbe: true},
				{do: "ok", key: 1, want: BreakerHalfOpen},
				{wait: 29 * time.Second, do: "probe", key: 4, want: BreakerHalfOpen, wantProbe: false},
				{wait: time.Second, do: "probe", key: 4, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 5, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 6, want: BreakerHalfOpen, wantProbe: false},
				{do: "ok", key: 4, want: BreakerHalfOpen},
				{do: "ok", key: 5, want: BreakerClosed},
			}),
		},
		{
			name: "closed after probes counts afresh",
			ops: seq(open5, halfOpen, []op{
				{do: "probe", key: 1, want: BreakerHalfOpen, wantProbe: true},
				{do: "ok", key: 1, want: BreakerHalfOpen},
				{do: "probe", key: 2, want: BreakerHalfOpen, wantProbe: true},
				{do: "ok", key: 2, want: BreakerHalfOpen},
				{do: "probe", key: 3, want: BreakerHalfOpen, wantProbe: true},
				{do: "ok", key: 3, want: BreakerClosed},
			}, open5),
			wantReason: "5 consecutive failures",
		},
		{name: "trip opens a closed breaker", ops: []op{{do: "trip", want: BreakerOpen}}, wantReason: "failure during canary"},
		{
			name:       "trip leaves a half-open breaker alone",
			ops:        seq(open5, halfOpen, []op{{do: "trip", want: BreakerHalfOpen}}),
			wantReason: "5 consecutive failures",
		},
		{
			name:   "one probe is enough when configured",
			change: func(c *BreakerConfig) { c.HalfOpenProbes = 1 },
			ops: seq(open5, halfOpen, []op{
				{do: "probe", key: 1, want: BreakerHalfOpen, wantProbe: true},
				{do: "probe", key: 2, want: BreakerHalfOpen, wantProbe: false},
				{do: "ok", key: 1, want: BreakerClosed},
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := scenarioConfig().Breaker
			if tt.change != nil {
				tt.change(&cfg)
			}
			now := t0
			b := newBreaker(&cfg, now)
			for i, o := range tt.ops {
				now = now.Add(o.wait)
				b.advance(now)
				switch o.do {
				case "ok", "fail":
					b.observe(o.key, o.do == "fail", now)
				case "probe":
					if got := b.probe(o.key, now); got != o.wantProbe {
						t.Fatalf("op %d: probe(%d) = %v, want %v", i, o.key, got, o.wantProbe)
					}
				case "trip":
					b.trip(now, "failure during canary")
				}
				if b.state != o.want {
					t.Fatalf("op %d (%s): state %v, want %v", i, o.do, b.state, o.want)
				}
			}
			if b.reason != tt.wantReason {
				t.Errorf("reason %q, want %q", b.reason, tt.wantReason)
			}
		})
	}
}

func TestBreakerStatus(t *testing.T) {
	cfg := scenarioConfig().Breaker
	b := newBreaker(&cfg, t0)
	b.observe(0, false, t0)
	b.observe(0, true, t0)
	b.observe(0, true, t0)
	got := b.status()
	want := BreakerStatus{State: BreakerClosed, Since: t0, Requests: 3, Failures: 2, ConsecutiveFailures: 2}
	if got != want {
		t.Errorf("closed status = %+v, want %+v", got, want)
	}
	for range 3 {
		b.observe(0, true, t0)
	}
	got = b.status()
	want = BreakerStatus{State: BreakerOpen, Since: t0, Reason: "5 consecutive failures", HalfOpenAt: t0.Add(30 * time.Second)}
	if got != want {
		t.Errorf("open status = %+v, want %+v", got, want)
	}
}
