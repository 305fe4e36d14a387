package main

import (
	"fmt"
	"io"
	"time"
)

type result struct {
	Date, Machine, GoVersion string
	C1, C16                  [2]stats // direct, gateway
	TTFT                     [2]time.Duration
	Idle                     map[string]int64 // kB

	cpuBefore, cpuAfter int64
	cpuRequests         int
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func (r result) render(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Gateway overhead (`make bench`)\n\n")
	p("%s, %s, %s. The same chat completion sent straight to the zero-delay provider simulator and through the whole gateway (real Envoy 1.40, ext_proc with auth, routing, translation and usage, xds, Redis), interleaved in blocks within one run.\n\n", r.Date, r.Machine, r.GoVersion)
	p("| Concurrency | Path | p50 | p99 | Throughput |\n|---|---|---|---|---|\n")
	for _, c := range []struct {
		n int
		s [2]stats
	}{{1, r.C1}, {16, r.C16}} {
		for i, name := range []string{"direct", "gateway"} {
			p("| %d | %s | %s | %s | %.0f req/s |\n", c.n, name, ms(c.s[i].P50), ms(c.s[i].P99), c.s[i].Throughput)
		}
	}
	p("\n| Measure | Value | Target |\n|---|---|---|\n")
	p("| Added latency, concurrency 1, p50 | %s | ≤ 0.35 ms |\n", ms(r.C1[1].P50-r.C1[0].P50))
	p("| Added latency, concurrency 1, p99 | %s | ≤ 0.8 ms |\n", ms(r.C1[1].P99-r.C1[0].P99))
	p("| Added latency, concurrency 16, p50 | %s | |\n", ms(r.C16[1].P50-r.C16[0].P50))
	p("| Streamed time to first token added (p50) | %s | ≤ 1 ms |\n", ms(r.TTFT[1]-r.TTFT[0]))
	if r.cpuRequests > 0 {
		perReq := time.Duration(float64(r.cpuAfter-r.cpuBefore) * float64(10*time.Millisecond) / float64(r.cpuRequests))
		p("| Gateway CPU per request (Envoy + ext_proc + Redis, concurrency 16) | %.0f µs | ≤ 200 µs |\n", float64(perReq)/float64(time.Microsecond))
	}
	var total int64
	for _, v := range r.Idle {
		total += v
	}
	p("| Resident memory when idle (Envoy %d MB, ext_proc %d MB, xds %d MB) | %d MB | ≤ 100 MB |\n",
		r.Idle["envoy-0"]/1024, r.Idle["extproc-0"]/1024, r.Idle["xds"]/1024, total/1024)
}
