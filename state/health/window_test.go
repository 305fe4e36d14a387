package health

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestJudge(t *testing.T) {
	tests := []struct {
		name       string
		s          Stats
		want       State
		wantReason string
	}{
		{name: "empty window", s: Stats{Quota: -1}, want: Healthy},
		{name: "all good", s: Stats{Requests: 100, LatencySamples: 100, P99: Duration(time.Second), Quota: 0.9}, want: Healthy},
		{name: "errors below 1%", s: Stats{Requests: 1000, Errors: 9, ErrorRate: 0.009, Quota: -1}, want: Healthy},
		{name: "errors at 1% are degraded", s: Stats{Requests: 100, Errors: 1, ErrorRate: 0.01, Quota: -1}, want: Degraded, wantReason: "error rate 1% ≥ 1%"},
		{name: "errors at 5% are still degraded", s: Stats{Requests: 100, Errors: 5, ErrorRate: 0.05, Quota: -1}, want: Degraded, wantReason: "error rate 5% ≥ 1%"},
		{name: "errors above 5%", s: Stats{Requests: 40, Errors: 3, ErrorRate: 0.075, Quota: -1}, want: Unavailable, wantReason: "error rate 7.5% > 5%"},
		{name: "too few attempts to trust errors", s: Stats{Requests: 19, Errors: 19, ErrorRate: 1, Quota: -1}, want: Healthy},
		{name: "p99 just below 3s", s: Stats{LatencySamples: 20, P99: Duration(2999 * time.Millisecond), Quota: -1}, want: Healthy},
		{name: "p99 at 3s is degraded", s: Stats{LatencySamples: 20, P99: Duration(3 * time.Second), Quota: -1}, want: Degraded, wantReason: "p99 3s ≥ 3s"},
		{name: "p99 at 6s is still degraded", s: Stats{LatencySamples: 20, P99: Duration(6 * time.Second), Quota: -1}, want: Degraded, wantReason: "p99 6s ≥ 3s"},
		{name: "p99 above 6s", s: Stats{LatencySamples: 20, P99: Duration(6500 * time.Millisecond), Quota: -1}, want: Unavailable, wantReason: "p99 6.5s > 6s"},
		{name: "too few latencies to trust p99", s: Stats{LatencySamples: 19, P99: Duration(time.Minute), Quota: -1}, want: Healthy},
		{name: "quota above 20%", s: Stats{Quota: 0.21}, want: Healthy},
		{name: "quota at 20% is degraded", s: Stats{Quota: 0.2}, want: Degraded, wantReason: "quota 20% ≤ 20%"},
		{name: "quota at 5% is still degraded", s: Stats{Quota: 0.05}, want: Degraded, wantReason: "quota 5% ≤ 20%"},
		{name: "quota below 5%, even with one request", s: Stats{Requests: 1, Quota: 0.03}, want: Unavailable, wantReason: "quota 3% < 5%"},
		{
			name: "every unavailable signal is named",
			s:    Stats{Requests: 50, Errors: 10, ErrorRate: 0.2, LatencySamples: 50, P99: Duration(7 * time.Second), Quota: 0.01},
			want: Unavailable, wantReason: "error rate 20% > 5%, p99 7s > 6s, quota 1% < 5%",
		},
		{
			name: "unavailable signal hides degraded ones",
			s:    Stats{Requests: 50, Errors: 1, ErrorRate: 0.02, Quota: 0.01},
			want: Unavailable, wantReason: "quota 1% < 5%",
		},
		{
			name: "two degraded signals",
			s:    Stats{Requests: 50, Errors: 1, ErrorRate: 0.02, LatencySamples: 50, P99: Duration(3400 * time.Millisecond), Quota: -1},
			want: Degraded, wantReason: "error rate 2% ≥ 1%, p99 3.4s ≥ 3s",
		},
	}
	cfg := scenarioConfig()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := judge(tt.s, &cfg)
			if got != tt.want || reason != tt.wantReason {
				t.Errorf("judge() = %v %q, want %v %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestWindowSlides(t *testing.T) {
	cfg := scenarioConfig() // 60s in buckets of 6s
	type add struct {
		at     time.Duration
		failed bool
		quota  float64
	}
	tests := []struct {
		name         string
		adds         []add
		at           time.Duration
		wantRequests int
		wantErrors   int
		wantQuota    float64
	}{
		{name: "all inside", adds: []add{{0, true, -1}, {10 * time.Second, false, -1}, {59 * time.Second, false, -1}}, at: 59 * time.Second, wantRequests: 3, wantErrors: 1, wantQuota: -1},
		{name: "first bucket leaves at 60s", adds: []add{{0, true, -1}, {10 * time.Second, false, -1}}, at: 60 * time.Second, wantRequests: 1, wantQuota: -1},
		{name: "bucket leaves at its own end, not its samples'", adds: []add{{5 * time.Second, true, -1}, {6 * time.Second, false, -1}}, at: 65 * time.Second, wantRequests: 1, wantQuota: -1},
		{name: "everything leaves", adds: []add{{0, true, -1}, {30 * time.Second, true, -1}}, at: 10 * time.Minute, wantRequests: 0, wantQuota: -1},
		{name: "ring slot reused after a full turn", adds: []add{{0, true, -1}, {60 * time.Second, false, -1}}, at: 61 * time.Second, wantRequests: 1, wantQuota: -1},
		{name: "latest quota wins", adds: []add{{0, false, 0.5}, {time.Second, false, 0.2}, {2 * time.Second, false, -1}}, at: 3 * time.Second, wantRequests: 3, wantQuota: 0.2},
		{name: "quota expires with its bucket", adds: []add{{0, false, 0.02}, {30 * time.Second, false, -1}}, at: 61 * time.Second, wantRequests: 1, wantQuota: -1},
		{name: "clock stepping back writes to the newest bucket", adds: []add{{30 * time.Second, false, -1}, {20 * time.Second, true, -1}}, at: 89 * time.Second, wantRequests: 2, wantErrors: 1, wantQuota: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow(&cfg)
			for _, a := range tt.adds {
				w.add(a.at, a.failed, 0, 0, a.quota)
			}
			w.advance(w.epochOf(tt.at))
			s := w.stats()
			if s.Requests != tt.wantRequests || s.Errors != tt.wantErrors || s.Quota != tt.wantQuota {
				t.Errorf("stats = %d requests, %d errors, quota %v; want %d, %d, %v",
					s.Requests, s.Errors, s.Quota, tt.wantRequests, tt.wantErrors, tt.wantQuota)
			}
		})
	}
}

func TestWindowPercentiles(t *testing.T) {
	cfg := scenarioConfig()
	tests := []struct {
		name      string
		latencies func(i int) time.Duration
		n         int
		wantP95   time.Duration
		wantP99   time.Duration
	}{
		{name: "all equal is exact", n: 50, latencies: func(int) time.Duration { return 3400 * time.Millisecond }, wantP95: 3400 * time.Millisecond, wantP99: 3400 * time.Millisecond},
		{name: "uniform 1..1000 ms", n: 1000, latencies: func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }, wantP95: 950 * time.Millisecond, wantP99: 990 * time.Millisecond},
		{name: "one slow in a hundred stays out of p99", n: 100, latencies: func(i int) time.Duration {
			if i == 0 {
				return 30 * time.Second
			}
			return 200 * time.Millisecond
		}, wantP95: 200 * time.Millisecond, wantP99: 200 * time.Millisecond},
		{name: "two slow in a hundred make p99", n: 100, latencies: func(i int) time.Duration {
			if i < 2 {
				return 30 * time.Second
			}
			return 200 * time.Millisecond
		}, wantP95: 200 * time.Millisecond, wantP99: 30 * time.Second},
		{name: "below a millisecond", n: 20, latencies: func(int) time.Duration { return 300 * time.Microsecond }, wantP95: 300 * time.Microsecond, wantP99: 300 * time.Microsecond},
		{name: "beyond the last bin", n: 20, latencies: func(int) time.Duration { return 2 * time.Hour }, wantP95: 2 * time.Hour, wantP99: 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow(&cfg)
			for i := range tt.n {
				w.add(time.Duration(i)*time.Millisecond, false, tt.latencies(i), tt.latencies(i), -1)
			}
			s := w.stats()
			// Bins are 5 % wide; a percentile is reported at most 5 % high
			// and never low.
			for _, c := range []struct {
				what      string
				got, want time.Duration
			}{{"p95", time.Duration(s.P95), tt.wantP95}, {"p99", time.Duration(s.P99), tt.wantP99}, {"ttft p95", time.Duration(s.TTFTP95), tt.wantP95}} {
				if c.got < c.want || float64(c.got) > 1.05*float64(c.want) {
					t.Errorf("%s = %v, want %v (+5%%)", c.what, c.got, c.want)
				}
			}
			if s.LatencySamples != tt.n || s.TTFTSamples != tt.n {
				t.Errorf("samples = %d latency, %d ttft, want %d each", s.LatencySamples, s.TTFTSamples, tt.n)
			}
		})
	}
}

func TestWindowMaxFollowsLiveBuckets(t *testing.T) {
	cfg := scenarioConfig()
	w := newWindow(&cfg)
	for range 20 {
		w.add(0, false, 9*time.Second, 0, -1)
	}
	for range 20 {
		w.add(30*time.Second, false, 100*time.Millisecond, 0, -1)
	}
	w.advance(w.epochOf(61 * time.Second))
	if got := time.Duration(w.stats().P99); got > 105*time.Millisecond {
		t.Errorf("p99 after the slow bucket left = %v, want about 100ms", got)
	}
}

func TestWindowRebucket(t *testing.T) {
	tests := []struct {
		name         string
		window       time.Duration
		buckets      int
		wantRequests int
		wantQuota    float64
	}{
		{name: "same length, finer buckets", window: time.Minute, buckets: 60, wantRequests: 3, wantQuota: 0.4},
		{name: "longer window keeps all", window: 5 * time.Minute, buckets: 5, wantRequests: 3, wantQuota: 0.4},
		{name: "shorter window keeps the recent", window: 20 * time.Second, buckets: 4, wantRequests: 1, wantQuota: 0.4},
		{name: "very short window keeps nothing", window: 4 * time.Second, buckets: 4, wantRequests: 0, wantQuota: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := scenarioConfig()
			w := newWindow(&cfg)
			w.add(5*time.Second, true, time.Second, 0, -1)
			w.add(25*time.Second, false, time.Second, 0, -1)
			w.add(45*time.Second, false, time.Second, 0, 0.4)
			next := cfg
			next.Window, next.Buckets = tt.window, tt.buckets
			got := w.rebucket(&next, 50*time.Second).stats()
			if got.Requests != tt.wantRequests || got.Quota != tt.wantQuota || got.LatencySamples != tt.wantRequests {
				t.Errorf("after rebucket: %d requests, %d latencies, quota %v; want %d, %d, %v",
					got.Requests, got.LatencySamples, got.Quota, tt.wantRequests, tt.wantRequests, tt.wantQuota)
			}
		})
	}
}

func TestDurationText(t *testing.T) {
	got := map[string]string{}
	for _, d := range []time.Duration{3400 * time.Millisecond, 3456789 * time.Microsecond, 300 * time.Microsecond, 0} {
		b, _ := Duration(d).MarshalText()
		got[d.String()] = string(b)
	}
	want := map[string]string{"3.4s": "3.4s", "3.456789s": "3.457s", "300µs": "300µs", "0s": "0s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Duration text (-want +got):\n%s", diff)
	}
}
