package main

import (
	"fmt"
	"io"
	"time"
)

type result struct {
	Date, Machine, GoVersion string
	Paths                    int
	C1, C16                  [3]stats // direct, plain Envoy, gateway
	TTFT                     [2]time.Duration
	Idle                     map[string]int64 // kB
	Decide                   time.Duration
}

var pathNames = [3]string{"direct to the simulator", "plain Envoy (router only)", "Switchyard gateway"}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

func (r result) render(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Gateway overhead (`make bench`)\n\n")
	p("%s, %s, %s. The same chat completion sent straight to the zero-delay provider simulator, through a bare Envoy (the same binary, router filter only) and through the whole gateway — real Envoy 1.40, ext_proc with auth, routing, quota (budgets and rate limits in Redis), translation and usage, the xds control plane — interleaved in blocks within one run. CPU is the user+system time of each path's own processes (the gateway: Envoy, ext_proc and Redis) per request.\n\n", r.Date, r.Machine, r.GoVersion)
	p("| Concurrency | Path | p50 | p99 | Throughput | CPU per request |\n|---|---|---|---|---|---|\n")
	for _, c := range []struct {
		n int
		s [3]stats
	}{{1, r.C1}, {16, r.C16}} {
		for i, name := range pathNames {
			cpu := "—"
			if i > 0 {
				cpu = us(c.s[i].CPUPerRequest)
			}
			p("| %d | %s | %s | %s | %.0f req/s | %s |\n", c.n, name, ms(c.s[i].P50), ms(c.s[i].P99), c.s[i].Throughput, cpu)
		}
	}
	p("\n| Measure | Value | Target |\n|---|---|---|\n")
	p("| Added latency, concurrency 1, p50 | %s (a bare Envoy hop alone: %s) | ≤ 0.35 ms |\n", ms(r.C1[2].P50-r.C1[0].P50), ms(r.C1[1].P50-r.C1[0].P50))
	p("| Added latency, concurrency 1, p99 | %s (bare Envoy: %s) | ≤ 0.8 ms |\n", ms(r.C1[2].P99-r.C1[0].P99), ms(r.C1[1].P99-r.C1[0].P99))
	p("| Added latency, concurrency 16, p50 | %s (bare Envoy: %s) | |\n", ms(r.C16[2].P50-r.C16[0].P50), ms(r.C16[1].P50-r.C16[0].P50))
	p("| Streamed time to first token added (p50) | %s | ≤ 1 ms |\n", ms(r.TTFT[1]-r.TTFT[0]))
	p("| Gateway CPU per request, concurrency 1 / 16 | %s / %s (bare Envoy: %s / %s) | ≤ 200 µs |\n",
		us(r.C1[2].CPUPerRequest), us(r.C16[2].CPUPerRequest), us(r.C1[1].CPUPerRequest), us(r.C16[1].CPUPerRequest))
	var total int64
	for _, v := range r.Idle {
		total += v
	}
	p("| Resident memory when idle (Envoy %d MB, ext_proc %d MB, xds %d MB) | %d MB | ≤ 100 MB |\n",
		r.Idle["envoy-0"]/1024, r.Idle["extproc-0"]/1024, r.Idle["xds"]/1024, total/1024)
	p("| Routing decision (50 models, 20 rules; `BenchmarkDecide`) | %.1f µs | ≤ 20 µs |\n", float64(r.Decide)/float64(time.Microsecond))
}
