package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

type result struct {
	Date, Machine, GoVersion string
	Pinned                   string
	// Load is the machine's load averages when the run began.
	Load string
	// Paths is how many paths ran: pathAnchor's only when the anchor did
	// (AnchorSkipped says why not).
	Paths         int
	AnchorSkipped string
	// By path (pathDirect, …).
	C1, C64 []stats
	TTFT    []time.Duration // one stream at a time, p50
	// OpenRate is the open-loop rate every path was sent, req/s.
	OpenRate float64
	OpenLoop []tail
	Streamed []streamed
	// StreamMessages is the gateway's ext_proc messages per streamed request.
	StreamMessages float64
	// Held is the many-streams row: the gateway's, then the anchor's.
	Held []heldStreams
	// Idle is by process: "envoy-0" and "node" (xds with ext_proc) as make
	// run starts them, "apart …" the three run apart, "bare envoy" the
	// bare hop.
	Idle   map[string]memory
	Decide time.Duration
}

// tail is one path's latencies under the open loop, failed requests
// included, and its failures by kind.
type tail struct {
	N              int
	P50, P99, P999 time.Duration
	Failures       map[string]int
	CPUPerRequest  time.Duration
	// Switches is the path's processes' context switches per request.
	Switches float64
}

// streamed is one path's streams at concurrency streamConc.
type streamed struct {
	Rate         float64 // streams a second
	TTFT         time.Duration
	CPUPerStream time.Duration
	// CPUSplit is CPUPerStream by process, as stats.CPUSplit.
	CPUSplit []time.Duration
}

var pathNames = []string{"direct to the simulator", "bare Envoy hop (router only)", "Switchyard gateway", "Envoy AI Gateway v1.1 (anchor)"}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

// verdict marks a figure against its target.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// pctlf is the p-th percentile for a fractional p (99.9).
func pctlf(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p/100)]
}

// loadAverage is the machine's 1, 5 and 15 minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

func (r result) render(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	anchor := r.Paths > pathAnchor
	p("## Gateway overhead (`make bench`)\n\n")
	p("%s, %s, %s; load average when the run began %s (the machine is shared: compare the paths of one run, not runs). The same chat completion sent straight to the zero-delay provider simulator, through a bare Envoy hop (the same binary, router filter only), through the whole gateway — real Envoy 1.40, ext_proc with auth, routing, quota (budgets and rate limits in Redis), translation and usage, the xds control plane, which shares ext_proc's process as in `make run` (cmd/node) — ", r.Date, r.Machine, r.GoVersion, r.Load)
	if anchor {
		p("and through Envoy AI Gateway v1.1's data plane (its extproc and the same Envoy with the two ext_proc filters its controller generates, from a static bootstrap: bench/gateway/aigw; no auth, quotas, budgets or ledger), ")
	} else {
		p("(the anchor, Envoy AI Gateway, was skipped: %s; build it with ../shared/peers/aigw/build.sh and set %s to run it), ", r.AnchorSkipped, aigwEnv)
	}
	p("interleaved in blocks within one run. Pinning: %s; each Envoy runs one worker. CPU is the user+system time of each path's own processes (the gateway: Envoy, the xds and ext_proc process, and Redis; the anchor: Envoy and its extproc) per request. ext_proc messages and Redis round trips are read from ext_proc's metrics around the gateway's blocks; Redis round trips count every one ext_proc made (leases taken and committed in the background, the health board), and in brackets those a request waited for.\n\n", r.Pinned)
	r.renderClosed(w)

	p("\nOpen loop: %.0f requests a second (%.0f %% of the gateway's throughput at concurrency 64 above) sent to every path for %s, in blocks, whatever the answers' pace; latency counts from when a request was due.\n\n", r.OpenRate, 100*openLoopShare, openLoopFor)
	r.renderOpen(w)
	r.renderStreamed(w)
	p("\nMany open streams: %d clients each streaming one answer after another for %s (events %s apart, 16 words: about 5 s a stream), each gateway in turn on its core, its bound on requests in flight raised above %d. Memory is the resident set, idle (%s after a warm-up) and at its peak; per stream is ext_proc's growth over %d.\n\n",
		openStreams, holdFor, time.Duration(slowStream.Delay), openStreams, idleWait, openStreams)
	p("| Gateway | Served | Failed | Time to first token p50 / p99 | ext_proc RSS idle → peak | per open stream | Envoy RSS idle → peak |\n|---|---|---|---|---|---|---|\n")
	for i, h := range r.Held {
		p("| %s | %d | %d%s | %s / %s | %d → %d MB | %.0f KB | %d → %d MB |\n", pathNames[pathGateway+i], h.served, h.failed, failureNote(h.failures),
			ms(pctl0(h.ttft, 50)), ms(pctl0(h.ttft, 99)), h.extprocIdle/1024, h.extprocPeak/1024, h.perStream(openStreams), h.envoyIdle/1024, h.envoyPeak/1024)
	}

	total := r.Idle["envoy-0"].RSS + r.Idle["node"].RSS
	apart := r.Idle["apart envoy"].RSS + r.Idle["apart extproc"].RSS + r.Idle["apart xds"].RSS
	pod := r.Idle["apart envoy"].RSS + r.Idle["apart extproc"].RSS
	addP50 := func(i int) time.Duration { return r.C1[i].P50 - r.C1[pathDirect].P50 }
	ownP99 := r.C1[pathGateway].P99
	gw := r.C64[pathGateway]
	p("\n| Measure | Value | Target | |\n|---|---|---|---|\n")
	if anchor {
		a, as, ah, gh := r.C64[pathAnchor], r.Streamed[pathAnchor], r.Held[1], r.Held[0]
		p("| Throughput on one core, concurrency 64 | %.0f req/s (anchor: %.0f) | ≥ the anchor's | %s |\n", gw.Throughput, a.Throughput, verdict(gw.Throughput >= a.Throughput))
		p("| CPU per request, concurrency 64 | %s (anchor: %s) | ≤ the anchor's | %s |\n", us(gw.CPUPerRequest), us(a.CPUPerRequest), verdict(gw.CPUPerRequest <= a.CPUPerRequest))
		p("| Streams a second, concurrency %d | %.0f (anchor: %.0f) | ≥ the anchor's | %s |\n", streamConc, r.Streamed[pathGateway].Rate, as.Rate, verdict(r.Streamed[pathGateway].Rate >= as.Rate))
		p("| Added latency, concurrency 1, p50 | %s (anchor: %s; bare Envoy hop: %s) | ≤ the anchor's | %s |\n", ms(addP50(pathGateway)), ms(addP50(pathAnchor)), ms(addP50(pathBare)), verdict(addP50(pathGateway) <= addP50(pathAnchor)))
		p("| ext_proc memory per open stream, %d slow streams | %.0f KB, %d failed (anchor: %.0f KB, %d failed) | ≤ the anchor's, every stream served | %s |\n", openStreams, gh.perStream(openStreams), gh.failed, ah.perStream(openStreams), ah.failed,
			verdict(gh.perStream(openStreams) <= ah.perStream(openStreams) && gh.failed == 0))
	} else {
		p("| Against Envoy AI Gateway (throughput, CPU, streams, added p50, memory per stream) | skipped: %s | | |\n", r.AnchorSkipped)
	}
	ol, olFailed := r.OpenLoop[pathGateway], 0
	for _, n := range r.OpenLoop[pathGateway].Failures {
		olFailed += n
	}
	p("| p99 at %.0f req/s open loop (%.0f %% of capacity) | %s, %d failed (p99.9 %s; own p99 at concurrency 1: %s; its core %.0f %% busy, at %s a request against %s at concurrency 64) | ≤ 3× its own p99 at concurrency 1, none failed | %s |\n",
		r.OpenRate, 100*openLoopShare, ms(ol.P99), olFailed, ms(ol.P999), ms(ownP99), r.busy(ol), us(ol.CPUPerRequest), us(gw.CPUPerRequest), verdict(ol.P99 <= 3*ownP99 && olFailed == 0))
	ttft := r.TTFT[pathGateway] - r.TTFT[pathDirect]
	p("| Streamed time to first token added (p50, one at a time) | %s (bare Envoy hop: %s) | ≤ 1 ms | %s |\n", ms(ttft), ms(r.TTFT[pathBare]-r.TTFT[pathDirect]), verdict(ttft <= time.Millisecond))
	p("| ext_proc messages per request: non-streamed, concurrency 64 / streamed | %.2f / %.2f | ≤ 4 non-streamed | %s |\n", gw.Messages, r.StreamMessages, verdict(gw.Messages <= 4))
	p("| Redis round trips a request waits for, concurrency 64 (all, background included) | %.3f (%.3f) | 0 for a tenant far from its limits | %s |\n", gw.PathTrips, gw.RoundTrips, verdict(gw.PathTrips < 0.01))
	p("| Resident memory of a node when idle, %s after its last request, as make run starts it (Envoy %s; xds and ext_proc in one process, cmd/node, %s; the bare Envoy hop %s) | %d MB (the three processes apart, as docker-compose runs them: %d MB, Envoy %s, ext_proc %s, xds %s; without xds, the gateway pod of deploy/kubernetes beside a shared control plane: %d MB) | ≤ 120 MB | %s |\n",
		idleWait, r.Idle["envoy-0"], r.Idle["node"], r.Idle["bare envoy"], total/1024, apart/1024, r.Idle["apart envoy"], r.Idle["apart extproc"], r.Idle["apart xds"], pod/1024, verdict(total <= 120*1024))
	p("| Routing decision (50 models, 20 rules; `BenchmarkDecide`) | %.1f µs | ≤ 20 µs | %s |\n", float64(r.Decide)/float64(time.Microsecond), verdict(r.Decide <= 20*time.Microsecond))
}

// pctl0 is pctl, 0 for no samples.
func pctl0(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return pctl(d, p)
}

// failureNote lists the failures by kind: " (3: HTTP 500)".
func failureNote(f map[string]int) string {
	if len(f) == 0 {
		return ""
	}
	kinds := make([]string, 0, len(f))
	for k := range f {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d: %s", f[k], k)
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func (m memory) String() string {
	return fmt.Sprintf("%d MB: %d anonymous, %d file", m.RSS/1024, m.Anon/1024, m.File/1024)
}

// renderClosed writes the closed-loop rows (concurrency 1 and 64) and each
// path's CPU by process.
func (r result) renderClosed(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("| Concurrency | Path | p50 | p99 | Throughput | CPU per request | ext_proc messages / request | Redis round trips / request |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range []struct {
		n int
		s []stats
	}{{1, r.C1}, {64, r.C64}} {
		for i, st := range c.s {
			cpu, msgs, trips := "—", "—", "—"
			if i > pathDirect {
				cpu = us(st.CPUPerRequest)
			}
			if i == pathGateway {
				msgs, trips = fmt.Sprintf("%.2f", st.Messages), fmt.Sprintf("%.2f (%.2f)", st.RoundTrips, st.PathTrips)
			}
			p("| %d | %s | %s | %s | %.0f req/s | %s | %s | %s |\n", c.n, pathNames[i], ms(st.P50), ms(st.P99), st.Throughput, cpu, msgs, trips)
		}
	}
	for _, c := range []struct {
		n     int
		stats []stats
	}{{1, r.C1}, {64, r.C64}} {
		for _, i := range []int{pathGateway, pathAnchor} {
			if i < len(c.stats) {
				if by := byProcess(i, c.stats[i].CPUSplit); by != "" {
					p("\n%s, CPU per request at concurrency %d by process: %s.\n", pathNames[i], c.n, by)
				}
			}
		}
	}
}

// renderOpen writes the open-loop table: each path's tail, failures, CPU
// and context switches per request.
func (r result) renderOpen(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("| Path | Requests | p50 | p99 | p99.9 | p99 ÷ own p99 at concurrency 1 | Failed | CPU per request | Its core busy | Context switches per request |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for i, t := range r.OpenLoop {
		n := 0
		for _, v := range t.Failures {
			n += v
		}
		ratio, cpu, busy, switches := "—", "—", "—", "—"
		if i < len(r.C1) && r.C1[i].P99 > 0 {
			ratio = fmt.Sprintf("%.1f×", float64(t.P99)/float64(r.C1[i].P99))
		}
		if i > pathDirect {
			cpu, busy, switches = us(t.CPUPerRequest), fmt.Sprintf("%.0f %%", r.busy(t)), fmt.Sprintf("%.1f", t.Switches)
		}
		p("| %s | %d | %s | %s | %s | %s | %d%s | %s | %s | %s |\n", pathNames[i], t.N, ms(t.P50), ms(t.P99), ms(t.P999), ratio, n, failureNote(t.Failures), cpu, busy, switches)
	}
}

// busy is the share of its one core a path used under the open loop, in
// percent: its CPU per request at the rate it was sent. Near 100 the
// requests queue for the core, whatever the code does with it.
func (r result) busy(t tail) float64 {
	return 100 * t.CPUPerRequest.Seconds() * r.OpenRate
}

// renderStreamed writes the streamed row: streams a second, time to first
// token and CPU per stream, by process too.
func (r result) renderStreamed(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\nStreamed: %d streamed chat completions (the simulator's stream, about ten events) at concurrency %d, in blocks; time to the first content event, p50.\n\n", streamN, streamConc)
	p("| Path | Streams / s | Time to first token | CPU per stream | by process |\n|---|---|---|---|---|\n")
	for i, st := range r.Streamed {
		cpu, by := "—", cmp.Or(byProcess(i, st.CPUSplit), "—")
		if i > pathDirect {
			cpu = us(st.CPUPerStream)
		}
		p("| %s | %.0f | %s | %s | %s |\n", pathNames[i], st.Rate, ms(st.TTFT), cpu, by)
	}
}

// byProcess spells a CPU split of path i's processes; empty unless the
// path has several.
func byProcess(i int, split []time.Duration) string {
	names := processNames[i]
	if len(names) < 2 || len(names) != len(split) {
		return ""
	}
	parts := make([]string, len(names))
	for j, n := range names {
		parts[j] = n + " " + us(split[j])
	}
	return strings.Join(parts, ", ")
}

// processNames name each path's processes, in its pids' order.
var processNames = [][]string{pathDirect: nil, pathBare: {"Envoy"}, pathGateway: {"Envoy", "ext_proc", "Redis"}, pathAnchor: {"Envoy", "extproc"}}
