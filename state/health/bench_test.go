package health

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkAdmit measures the per-candidate cost a router pays: a healthy
// model among 50 with a full window.
func BenchmarkAdmit(b *testing.B) {
	f := benchFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		f.Admit("p3", "m7", uint64(i))
	}
}

// BenchmarkObserve measures recording one attempt.
func BenchmarkObserve(b *testing.B) {
	f := benchFixture(b)
	o := Observation{Provider: "p3", Model: "m7", Status: 200, Latency: 900 * time.Millisecond, TTFT: 200 * time.Millisecond, Quota: 0.6}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		f.Observe(o)
	}
}

func benchFixture(b *testing.B) *fixture {
	c := &clock{now: t0}
	m, err := New(DefaultConfig(), c.Now, nil)
	if err != nil {
		b.Fatal(err)
	}
	f := &fixture{Monitor: m, clock: c}
	for p := range 5 {
		for md := range 10 {
			for i := range 100 {
				f.Observe(Observation{Provider: fmt.Sprint("p", p), Model: fmt.Sprint("m", md), Status: 200, Latency: time.Duration(i) * 10 * time.Millisecond, Quota: 0.6})
			}
		}
	}
	return f
}
