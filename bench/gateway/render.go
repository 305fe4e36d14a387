package main

import (
	"fmt"
	"io"
	"time"
)

type result struct {
	Date, Machine, GoVersion string
	Pinned                   string
	Paths                    int
	C1, C64                  [3]stats         // direct, plain Envoy, gateway
	TTFT                     [3]time.Duration // direct, plain Envoy, gateway
	StreamMessages           float64          // ext_proc messages per streamed request
	// Idle is by process: "envoy-0" and "node" (xds with ext_proc) as make
	// run starts them, "apart …" the three run apart, "bare envoy" the
	// bare hop.
	Idle   map[string]memory
	Decide time.Duration
}

var pathNames = [3]string{"direct to the simulator", "bare Envoy hop (router only)", "Switchyard gateway"}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

// verdict marks a figure against its target.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func (r result) render(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Gateway overhead (`make bench`)\n\n")
	p("%s, %s, %s. The same chat completion sent straight to the zero-delay provider simulator, through a bare Envoy hop (the same binary, router filter only) and through the whole gateway — real Envoy 1.40, ext_proc with auth, routing, quota (budgets and rate limits in Redis), translation and usage, the xds control plane, which shares ext_proc's process as in `make run` (cmd/node) — interleaved in blocks within one run. Pinning: %s; each Envoy runs one worker. CPU is the user+system time of each path's own processes (the gateway: Envoy, the xds and ext_proc process, and Redis) per request. ext_proc messages and Redis round trips are read from ext_proc's metrics around the gateway's blocks; Redis round trips count every one ext_proc made (leases taken and committed in the background, the health board), and in brackets those a request waited for.\n\n", r.Date, r.Machine, r.GoVersion, r.Pinned)
	p("| Concurrency | Path | p50 | p99 | Throughput | CPU per request | ext_proc messages / request | Redis round trips / request |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range []struct {
		n int
		s [3]stats
	}{{1, r.C1}, {64, r.C64}} {
		for i, name := range pathNames {
			cpu, msgs, trips := "—", "—", "—"
			if i > 0 {
				cpu = us(c.s[i].CPUPerRequest)
			}
			if i == 2 {
				msgs, trips = fmt.Sprintf("%.2f", c.s[i].Messages), fmt.Sprintf("%.2f (%.2f)", c.s[i].RoundTrips, c.s[i].PathTrips)
			}
			p("| %d | %s | %s | %s | %.0f req/s | %s | %s | %s |\n", c.n, name, ms(c.s[i].P50), ms(c.s[i].P99), c.s[i].Throughput, cpu, msgs, trips)
		}
	}
	gw, bare := r.C64[2], r.C64[1]
	for _, c := range []struct {
		n  int
		sp []time.Duration
	}{{1, r.C1[2].CPUSplit}, {64, gw.CPUSplit}} {
		if len(c.sp) == 3 {
			p("\nThe gateway's CPU per request at concurrency %d, by process: Envoy %s, ext_proc %s, Redis %s.\n", c.n, us(c.sp[0]), us(c.sp[1]), us(c.sp[2]))
		}
	}
	addP50, bareP50 := r.C1[2].P50-r.C1[0].P50, r.C1[1].P50-r.C1[0].P50
	addP99, bareP99 := r.C1[2].P99-r.C1[0].P99, r.C1[1].P99-r.C1[0].P99
	ttft := r.TTFT[2] - r.TTFT[0]
	total := r.Idle["envoy-0"].RSS + r.Idle["node"].RSS
	apart := r.Idle["apart envoy"].RSS + r.Idle["apart extproc"].RSS + r.Idle["apart xds"].RSS
	pod := r.Idle["apart envoy"].RSS + r.Idle["apart extproc"].RSS
	ratio := float64(gw.CPUPerRequest) / float64(max(bare.CPUPerRequest, 1))
	p("\n| Measure | Value | Target | |\n|---|---|---|---|\n")
	p("| Gateway throughput on one core, concurrency 64 | %.0f req/s (bare Envoy hop: %.0f) | ≥ 2,500 req/s | %s |\n", gw.Throughput, bare.Throughput, verdict(gw.Throughput >= 2500))
	p("| Gateway CPU per request, concurrency 64 | %s = %.1f× the bare hop's %s | ≤ 4× | %s |\n", us(gw.CPUPerRequest), ratio, us(bare.CPUPerRequest), verdict(ratio <= 4))
	p("| Added latency, concurrency 1, p50 | %s (bare Envoy hop: %s) | ≤ bare + 0.6 ms | %s |\n", ms(addP50), ms(bareP50), verdict(addP50 <= bareP50+600*time.Microsecond))
	p("| Added latency, concurrency 1, p99 | %s (bare Envoy hop: %s) | ≤ bare + 1.5 ms | %s |\n", ms(addP99), ms(bareP99), verdict(addP99 <= bareP99+1500*time.Microsecond))
	p("| Streamed time to first token added (p50) | %s (bare Envoy hop: %s) | ≤ 1 ms | %s |\n", ms(ttft), ms(r.TTFT[1]-r.TTFT[0]), verdict(ttft <= time.Millisecond))
	p("| ext_proc messages per request: non-streamed, concurrency 64 / streamed | %.2f / %.2f | ≤ 4 non-streamed | %s |\n", gw.Messages, r.StreamMessages, verdict(gw.Messages <= 4))
	p("| Redis round trips a request waits for, concurrency 64 (all, background included) | %.3f (%.3f) | 0 for a tenant far from its limits | %s |\n", gw.PathTrips, gw.RoundTrips, verdict(gw.PathTrips < 0.01))
	p("| Resident memory of a node when idle, %s after its last request, as make run starts it (Envoy %s; xds and ext_proc in one process, cmd/node, %s; the bare Envoy hop %s) | %d MB (the three processes apart, as docker-compose runs them: %d MB, Envoy %s, ext_proc %s, xds %s; without xds, the gateway pod of deploy/kubernetes beside a shared control plane: %d MB) | ≤ 120 MB | %s |\n",
		idleWait, r.Idle["envoy-0"], r.Idle["node"], r.Idle["bare envoy"], total/1024, apart/1024, r.Idle["apart envoy"], r.Idle["apart extproc"], r.Idle["apart xds"], pod/1024, verdict(total <= 120*1024))
	p("| Routing decision (50 models, 20 rules; `BenchmarkDecide`) | %.1f µs | ≤ 20 µs | %s |\n", float64(r.Decide)/float64(time.Microsecond), verdict(r.Decide <= 20*time.Microsecond))
}

func (m memory) String() string {
	return fmt.Sprintf("%d MB: %d anonymous, %d file", m.RSS/1024, m.Anon/1024, m.File/1024)
}
