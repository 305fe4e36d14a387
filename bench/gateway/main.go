// Command gateway measures what Switchyard adds to a request: the same
// chat completion is sent straight to the zero-delay provider simulator,
// through a bare Envoy hop and through the whole gateway (Envoy, ext_proc
// with its filter chain, the control plane, Redis), side by side in one
// run, so machine noise hits all alike. Each path's processes are pinned to
// one core and the client and simulator (this process) to another. It
// reports latency percentiles and throughput at concurrency 1 and 64, the
// added latency, streamed time to first token, each path's CPU time per
// request, the gateway's ext_proc messages and Redis round trips per
// request and its idle memory, and writes them into docs/BENCHMARKS.md with
// -write.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/bench/benchdoc"
	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

const section = "gateway-overhead"

func main() {
	write := flag.String("write", "", "write the results into this markdown file (docs/BENCHMARKS.md)")
	n1 := flag.Int("n1", 2000, "requests per path at concurrency 1")
	n64 := flag.Int("n64", 10000, "requests per path at concurrency 64")
	profile := flag.String("profile", "", "only profile ext_proc (CPU and allocations) and write the profiles into this directory")
	profileConc := flag.Int("profile-concurrency", 64, "with -profile, the concurrency of the load profiled")
	profileStreamed := flag.Bool("profile-streamed", false, "with -profile, the load profiled is the streamed row's (set -profile-concurrency 16 for its concurrency)")
	heldProfile := flag.Int("profile-streams", 0, "with -profile, instead hold this many slow streams open and write ext_proc's heap and goroutines meanwhile")
	profileRate := flag.Float64("profile-rate", 0, "with -profile, instead profile what stalls requests sent open loop at this rate (req/s): trace, mutex, block and CPU profiles, gctrace")
	overload := flag.Duration("overload", 0, "instead, flood the gateway open loop at 2× and 4× its measured capacity for this long each")
	timeout := flag.Duration("timeout", time.Second, "with -overload, how long a client waits for its answer")
	instructions := flag.Int("instructions", 0, "instead, count the instructions Envoy runs per request of each kind, over this many requests, under valgrind's callgrind")
	extprocArgs := flag.String("extproc-args", "", "flags added to ext_proc's command line (say -max-inflight 128): with -overload, -profile-rate, -profile-streams, -closed or -open")
	onlyTracing := flag.Bool("tracing", false, "only compare the gateway with tracing off, on at 1 % and at 100 % (make bench runs this too)")
	closedOnly := flag.Bool("closed", false, "only the closed-loop rows (concurrency 1 and 64, each path's CPU by process), printed: a quick side-by-side check of a change")
	openOnly := flag.Float64("open", 0, "only the open-loop row at this rate (req/s), printed: a quick side-by-side check of a change to the tail")
	flag.Parse()
	var err error
	if stacksDir, err = os.MkdirTemp("", "switchyard-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	switch {
	case *profile != "" && *heldProfile > 0:
		err = profileStreams(*profile, *heldProfile, strings.Fields(*extprocArgs))
	case *profile != "" && *profileRate > 0:
		err = profileTail(*profile, *profileRate, strings.Fields(*extprocArgs))
	case *profile != "":
		err = profileExtProc(*profile, *profileConc, *profileStreamed)
	case *instructions > 0:
		err = countInstructions(*instructions)
	case *onlyTracing:
		err = runTracing(*write, *n1, *n64)
	case *overload > 0:
		err = runOverload(*write, *overload, *timeout, strings.Fields(*extprocArgs))
	default:
		if *write != "" && *extprocArgs != "" {
			err = errors.New("-extproc-args measures a variant: it does not write docs/BENCHMARKS.md")
			break
		}
		if *write != "" && (*closedOnly || *openOnly > 0) {
			err = errors.New("-closed and -open measure a part: they do not write docs/BENCHMARKS.md")
			break
		}
		err = run(*write, *n1, *n64, part{closed: *closedOnly, openRate: *openOnly}, strings.Fields(*extprocArgs))
	}
	_ = os.RemoveAll(stacksDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// stacksDir holds the files and logs of every stack the bench starts
// (startStack), removed when it ends: a stack keeps its logs, its spools
// and its ledger, tens of MB each, for the e2e tests to show on failure.
var stacksDir string

// startStack starts a gateway stack with its files in a directory of its
// own under stacksDir.
func startStack(ctx context.Context, o stack.Options) (*stack.Stack, error) {
	if o.Dir == "" {
		var err error
		if o.Dir, err = os.MkdirTemp(stacksDir, "stack-"); err != nil {
			return nil, err
		}
	}
	return stack.Start(ctx, o)
}

// idleWait is how long after its last request a node's memory is read:
// idle is a node that has served and then waited, long enough for ext_proc
// to give back what it held for the load (-release-when-idle, 2 s without
// a request).
const idleWait = 3 * time.Second

// idleApart reads the idle memory of the gateway's three processes run
// apart (as docker-compose and Kubernetes run them), after the same
// warm-up as the node's, under the names "apart envoy", "apart extproc"
// and "apart xds".
func idleApart(ctx context.Context, cpus string) (map[string]memory, error) {
	s, err := startStack(ctx, stack.Options{CPUs: cpus})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := unlimitedQuota(s); err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	defer client.CloseIdleConnections()
	if _, err := measure(client, gatewayTarget(s), 300, 4); err != nil {
		return nil, fmt.Errorf("warm-up of the gateway run apart: %w", err)
	}
	time.Sleep(idleWait)
	return map[string]memory{
		"apart envoy": residentKB(s.PID("envoy-0")), "apart extproc": residentKB(s.PID("extproc-0")), "apart xds": residentKB(s.PID("xds")),
	}, nil
}

type target struct {
	name string
	url  string
	body []byte
	auth string
	// want is the status every answer must have (200 when zero).
	want int
}

// The paths of the comparison, in the order they run in each block: the
// anchor last, when there is one.
const (
	pathDirect = iota
	pathBare
	pathGateway
	pathAnchor
)

// path is one way to the simulator: its request, its streamed request
// and the processes whose CPU it costs besides the client and the
// simulator.
type path struct {
	t, stream target
	pids      []int
}

// streamBody is the streamed chat completion of the streamed rows.
var streamBody = []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello there, tell me something"}]}`)

// Measurement sizes beyond n1 and n64.
const (
	// openLoopShare is the open-loop row's rate as a share of the
	// gateway's own closed-loop capacity at concurrency 64.
	openLoopShare = 0.6
	openLoopFor   = 10 * time.Second
	streamConc    = 16
	streamN       = 2000
	// Many slow streams: openStreams at once for holdFor, each as
	// slowStream describes.
	openStreams = 1000
	holdFor     = 20 * time.Second
)

// part is what a run measures when not everything: the closed-loop
// rows, or the open loop alone at a given rate.
type part struct {
	closed   bool
	openRate float64
}

func run(write string, n1, n64 int, only part, extprocArgs []string) error {
	ctx := context.Background()
	pin, err := pinSelf()
	if err != nil {
		return err
	}
	// The gateway as make run starts it: the control plane and ext_proc
	// in one process (cmd/node).
	s, err := startStack(ctx, stack.Options{CPUs: pin.paths, Node: true, ExtProcArgs: extprocArgs})
	if err != nil {
		return err
	}
	// Everything stops before the many-streams row, which starts its own.
	var stops []func()
	stopAll := sync.OnceFunc(func() {
		for _, f := range slices.Backward(stops) {
			f()
		}
	})
	defer stopAll()
	stops = append(stops, s.Close)
	if err := unlimitedQuota(s); err != nil {
		return err
	}
	envoy, err := stack.FindEnvoy(mustRoot())
	if err != nil {
		return err
	}
	plain, err := startPlainEnvoy(envoy, s.Dir, s.Sim.Addr("openai"), pin.paths)
	if err != nil {
		return err
	}
	stops = append(stops, plain.stop)

	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`)
	stream := streamBody
	direct := "http://" + s.Sim.Addr("openai") + "/v1/chat/completions"
	gw := s.URL + "/v1/chat/completions"
	paths := []path{
		{t: target{name: "direct", url: direct, body: body}, stream: target{url: direct, body: stream}},
		{t: target{name: "plain Envoy", url: plain.url(), body: body}, stream: target{url: plain.url(), body: stream}, pids: []int{plain.cmd.Process.Pid}},
		{t: target{name: "gateway", url: gw, body: body, auth: "Bearer sk-local-demo"}, stream: target{url: gw, body: stream, auth: "Bearer sk-local-demo"},
			pids: []int{s.PID("envoy-0"), s.PID("extproc-0"), s.PID("redis")}},
	}
	r := result{Date: time.Now().UTC().Format("2006-01-02"), Machine: benchdoc.Machine(), GoVersion: runtime.Version(), Pinned: pin.describe(), Load: loadAverage()}
	var anchor *aigw
	if bin := os.Getenv(aigwEnv); bin == "" {
		r.AnchorSkipped = aigwEnv + " not set"
	} else if anchor, err = startAIGW(bin, envoy, s.Dir, s.Sim.Addr("openai"), pin.paths); err != nil {
		return fmt.Errorf("the anchor (%s=%s): %w", aigwEnv, bin, err)
	} else {
		stops = append(stops, anchor.stop)
		paths = append(paths, path{t: target{name: "anchor", url: anchor.url(), body: body}, stream: target{url: anchor.url(), body: stream}, pids: anchor.pids()})
	}
	r.Paths = len(paths)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}

	for _, p := range paths {
		if _, err := measure(client, p.t, 300, 4); err != nil {
			return fmt.Errorf("warm-up %s: %w", p.t.name, err)
		}
	}
	if only.openRate > 0 {
		// Each path's own p99 one request at a time, the open loop's yardstick.
		r.C1 = make([]stats, len(paths))
		lat, dur := make([][]time.Duration, len(paths)), make([]time.Duration, len(paths))
		for range 5 {
			for i, p := range paths {
				start := time.Now()
				l, err := measure(client, p.t, n1/10, 1)
				if err != nil {
					return fmt.Errorf("%s at concurrency 1: %w", p.t.name, err)
				}
				dur[i] += time.Since(start)
				lat[i] = append(lat[i], l...)
			}
		}
		for i := range paths {
			r.C1[i] = summarize(lat[i], dur[i])
		}
		r.OpenRate = only.openRate
		r.OpenLoop = openLoops(paths, r.OpenRate)
		fmt.Printf("Open loop: %.0f requests a second sent to every path for %s, in blocks; load average when the run began %s.\n\n", r.OpenRate, openLoopFor, r.Load)
		r.renderOpen(os.Stdout)
		return nil
	}
	time.Sleep(idleWait)
	idle := map[string]memory{"bare envoy": residentKB(plain.cmd.Process.Pid), "envoy-0": residentKB(s.PID("envoy-0")), "node": residentKB(s.PID("extproc-0"))}
	apart, err := idleApart(ctx, pin.paths)
	if err != nil {
		return err
	}
	maps.Copy(idle, apart)
	r.Idle = idle

	extprocMetrics := s.Replicas[0].ExtProcMetrics + "/metrics"
	// counted runs f against the gateway and adds its ext_proc messages,
	// Redis round trips and those a request waited for to c.
	counted := func(c *[3]float64, f func() error) error {
		msg, trips, onPath, err := gatewayCounters(extprocMetrics)
		if err != nil {
			return err
		}
		if err := f(); err != nil {
			return err
		}
		// Settlement may finish just after the answer: let it.
		time.Sleep(100 * time.Millisecond)
		m, tr, op, err := gatewayCounters(extprocMetrics)
		c[0], c[1], c[2] = c[0]+m-msg, c[1]+tr-trips, c[2]+op-onPath
		return err
	}
	// Interleave blocks so every path sees the same machine weather.
	const blocks = 10
	for _, c := range []struct {
		conc, n int
		into    *[]stats
	}{{1, n1, &r.C1}, {64, n64, &r.C64}} {
		lat := make([][]time.Duration, len(paths))
		dur := make([]time.Duration, len(paths))
		ticks := make([]int64, len(paths))
		// split is each path's ticks by process (its pids' order).
		split := make([][]int64, len(paths))
		for i, p := range paths {
			split[i] = make([]int64, len(p.pids))
		}
		var counters [3]float64
		for range blocks {
			for i, p := range paths {
				before, each := cpuOf(p.pids), ticksOf(p.pids)
				block := func() error {
					start := time.Now()
					l, err := measure(client, p.t, c.n/blocks, c.conc)
					if err != nil {
						return fmt.Errorf("%s at concurrency %d: %w", p.t.name, c.conc, err)
					}
					dur[i] += time.Since(start)
					ticks[i] += cpuOf(p.pids) - before
					lat[i] = append(lat[i], l...)
					return nil
				}
				run := block
				if i == pathGateway {
					run = func() error { return counted(&counters, block) }
				}
				if err := run(); err != nil {
					return err
				}
				for j, v := range ticksOf(p.pids) {
					split[i][j] += v - each[j]
				}
			}
		}
		*c.into = make([]stats, len(paths))
		for i := range paths {
			st := summarize(lat[i], dur[i])
			st.CPUPerRequest = perRequest(ticks[i], len(lat[i]))
			for _, t := range split[i] {
				st.CPUSplit = append(st.CPUSplit, perRequest(t, len(lat[i])))
			}
			(*c.into)[i] = st
		}
		gs := &(*c.into)[pathGateway]
		n := float64(len(lat[pathGateway]))
		gs.Messages, gs.RoundTrips, gs.PathTrips = counters[0]/n, counters[1]/n, counters[2]/n
	}
	// Streams: one at a time for the time to first token added, then
	// streamConc at once for streams per second.
	ttft := make([][]time.Duration, len(paths))
	for range 5 {
		for i, p := range paths {
			for range 60 {
				d, err := firstToken(client, p.stream)
				if err != nil {
					return fmt.Errorf("%s streaming: %w", p.t.name, err)
				}
				ttft[i] = append(ttft[i], d)
			}
		}
	}
	sttft := make([][]time.Duration, len(paths))
	sdur := make([]time.Duration, len(paths))
	sticks := make([]int64, len(paths))
	ssplit := make([][]int64, len(paths))
	var scount [3]float64
	streamClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streamConc, DisableCompression: true}}
	for range 5 {
		for i, p := range paths {
			before, each := cpuOf(p.pids), ticksOf(p.pids)
			block := func() error {
				start := time.Now()
				l, err := streamRun(streamClient, p.stream, streamN/5, streamConc)
				if err != nil {
					return fmt.Errorf("%s streaming at concurrency %d: %w", p.t.name, streamConc, err)
				}
				sdur[i] += time.Since(start)
				sticks[i] += cpuOf(p.pids) - before
				sttft[i] = append(sttft[i], l...)
				return nil
			}
			if i == pathGateway {
				err = counted(&scount, block)
			} else {
				err = block()
			}
			if err != nil {
				return err
			}
			if ssplit[i] == nil {
				ssplit[i] = make([]int64, len(p.pids))
			}
			for j, v := range ticksOf(p.pids) {
				ssplit[i][j] += v - each[j]
			}
		}
	}
	for i := range paths {
		r.TTFT = append(r.TTFT, pctl(ttft[i], 50))
		st := streamed{Rate: float64(len(sttft[i])) / sdur[i].Seconds(), TTFT: pctl(sttft[i], 50), CPUPerStream: perRequest(sticks[i], len(sttft[i]))}
		for _, t := range ssplit[i] {
			st.CPUSplit = append(st.CPUSplit, perRequest(t, len(sttft[i])))
		}
		r.Streamed = append(r.Streamed, st)
	}
	r.StreamMessages = scount[0] / float64(len(sttft[pathGateway]))

	if only.closed {
		r.renderClosed(os.Stdout)
		r.renderStreamed(os.Stdout)
		fmt.Printf("\nIdle, %s after the warm-up: Envoy %s; node %s.\n", idleWait, r.Idle["envoy-0"], r.Idle["node"])
		return nil
	}

	// Open loop at a share of the gateway's own capacity.
	r.OpenRate = openLoopShare * r.C64[pathGateway].Throughput
	r.OpenLoop = openLoops(paths, r.OpenRate)
	if r.Decide, err = decisionTime(); err != nil {
		return err
	}
	// The many-streams row needs its own stacks: stop these first.
	stopAll()
	if r.Held, err = holdAll(ctx, pin, envoy, os.Getenv(aigwEnv)); err != nil {
		return err
	}

	var out bytes.Buffer
	r.render(&out)
	fmt.Print(out.String())
	if write != "" {
		if err := benchdoc.WriteSection(write, section, out.String()); err != nil {
			return err
		}
	}
	return writeTracing(write, r, pin, n1/2, n64/2)
}

// perRequest is t clock ticks (10 ms each) shared by n requests.
func perRequest(t int64, n int) time.Duration {
	return time.Duration(float64(t) * float64(10*time.Millisecond) / float64(n))
}

// openLoops sends rate requests a second to every path, the same rate
// for each, in blocks, and returns each path's tail.
func openLoops(paths []path, rate float64) []tail {
	open := make([][]time.Duration, len(paths))
	openTicks := make([]int64, len(paths))
	openSwitches := make([]int64, len(paths))
	failed := make([]map[string]int, len(paths))
	openClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}, Timeout: 10 * time.Second}
	defer openClient.CloseIdleConnections()
	for range 5 {
		for i, p := range paths {
			before, switches := cpuOf(p.pids), switchesOf(p.pids)
			l, f := openLoop(openClient, p.t, rate, openLoopFor/5)
			openTicks[i] += cpuOf(p.pids) - before
			openSwitches[i] += switchesOf(p.pids) - switches
			open[i] = append(open[i], l...)
			if failed[i] == nil {
				failed[i] = map[string]int{}
			}
			for k, n := range f {
				failed[i][k] += n
			}
		}
	}
	tails := make([]tail, 0, len(paths))
	for i, l := range open {
		tails = append(tails, tail{N: len(l), P50: pctl(l, 50), P99: pctlf(l, 99), P999: pctlf(l, 99.9), Failures: failed[i], CPUPerRequest: perRequest(openTicks[i], len(l)),
			Switches: float64(openSwitches[i]) / float64(len(l))})
	}
	return tails
}

// gatewayCounters reads ext_proc's messages so far (every phase, both
// streams), its Redis round trips (background ones included) and the
// store calls quota's requests waited for (onPath).
func gatewayCounters(url string) (messages, trips, onPath float64, err error) {
	if messages, err = harness.MetricSum(url, "switchyard_extproc_message_duration_seconds_count"); err != nil {
		return 0, 0, 0, err
	}
	if trips, err = harness.MetricSum(url, "switchyard_store_redis_roundtrips_total"); err != nil {
		return 0, 0, 0, err
	}
	onPath, err = harness.MetricSum(url, "switchyard_lease_store_calls_total", `path="request"`)
	return messages, trips, onPath, err
}

func mustRoot() string {
	root, err := stack.ModuleRoot()
	if err != nil {
		panic(err)
	}
	return root
}

// cpuOf sums the CPU clock ticks of processes.
func cpuOf(pids []int) int64 {
	var t int64
	for _, v := range ticksOf(pids) {
		t += v
	}
	return t
}

// ticksOf is each process's CPU clock ticks.
func ticksOf(pids []int) []int64 {
	out := make([]int64, len(pids))
	for i, p := range pids {
		out[i] = cpuTicks(p)
	}
	return out
}

// measure sends n requests with conc workers and returns their latencies.
func measure(client *http.Client, t target, n, conc int) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan int, n)
	)
	for i := range n {
		next <- i
	}
	close(next)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				start := time.Now()
				err := do(client, t)
				lat[i] = time.Since(start)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return lat, firstErr
}

func do(client *http.Client, t target) error {
	status, model, err := post(client, t)
	if err != nil {
		return err
	}
	if want := cmp.Or(t.want, http.StatusOK); status != want {
		return fmt.Errorf("status %d, want %d", status, want)
	}
	// A fallback would measure another provider's translation, not the
	// path under test.
	if model != "" && model != benchModel {
		return fmt.Errorf("served by %s, not %s", model, benchModel)
	}
	return nil
}

// post sends t's request and reads the whole answer: its status and the
// model that served it.
func post(client *http.Client, t target) (status int, model string, err error) {
	resp, err := client.Do(newRequest(t))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, "", err
	}
	return resp.StatusCode, resp.Header.Get("x-switchyard-model"), nil
}

func newRequest(t target) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, t.url, bytes.NewReader(t.body))
	req.Header.Set("Content-Type", "application/json")
	if t.auth != "" {
		req.Header.Set("Authorization", t.auth)
	}
	return req
}

// benchModel is the model every benchmark request names.
const benchModel = "gpt-4o-mini"

// unlimitedQuota makes the simulated openai report a rate-limit quota that
// never runs out (providersim.Plenty).
func unlimitedQuota(s *stack.Stack) error {
	return s.Sim.SetFault("openai", providersim.Fault{QuotaRemaining: providersim.Plenty()})
}

// firstToken is the time until the first content event of a stream.
func firstToken(client *http.Client, t target) (time.Duration, error) {
	req := newRequest(t)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var first time.Duration
	for sc.Scan() {
		if first == 0 && strings.HasPrefix(sc.Text(), "data: {") {
			first = time.Since(start)
		}
	}
	if first == 0 {
		return 0, fmt.Errorf("no event (status %d)", resp.StatusCode)
	}
	return first, sc.Err()
}

type stats struct {
	P50, P99   time.Duration
	Throughput float64
	// CPUPerRequest is the CPU time of the path's own processes (not the
	// client's nor the simulator's) per request; CPUSplit the same by
	// process, in the path's pids' order (the gateway's Envoy, ext_proc
	// and Redis; the anchor's Envoy and extproc).
	CPUPerRequest time.Duration
	CPUSplit      []time.Duration
	// Messages and RoundTrips are the gateway's ext_proc messages and Redis
	// round trips per request; PathTrips the round trips a request waited
	// for (RoundTrips less the leases' background work and the health
	// board's).
	Messages, RoundTrips, PathTrips float64
}

func summarize(lat []time.Duration, total time.Duration) stats {
	return stats{P50: pctl(lat, 50), P99: pctl(lat, 99), Throughput: float64(len(lat)) / total.Seconds()}
}

func pctl(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

// switchesOf sums the context switches, voluntary and not, of every
// thread of processes: each is a wakeup or a preemption on the core.
func switchesOf(pids []int) int64 {
	var n int64
	for _, pid := range pids {
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/status")
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
					c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					n += c
				}
			}
		}
	}
	return n
}

// cpuTicks is a process's user+system CPU time in clock ticks (1/100 s).
func cpuTicks(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the line.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// memory is a process's resident set, in kB: in all, and its anonymous
// and file-backed parts (the pages of the binary it has touched, which the
// kernel shares and may reclaim; the anonymous part is what the process
// allocated).
type memory struct{ RSS, Anon, File int64 }

func residentKB(pid int) memory {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return memory{}
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		switch k {
		case "VmRSS":
			m.RSS = n
		case "RssAnon":
			m.Anon = n
		case "RssFile":
			m.File = n
		}
	}
	return m
}
