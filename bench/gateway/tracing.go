package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/bench/benchdoc"
	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/stack"
)

// tracingSection is the part of docs/BENCHMARKS.md the tracing rows go to.
const tracingSection = "tracing-overhead"

// tracedGateway is one gateway of the tracing comparison: tracing off, or
// on at a sample ratio, exporting to a real collector.
type tracedGateway struct {
	name  string
	ratio float64 // < 0: tracing off
	s     *stack.Stack
	col   *harness.Collector
	t     target
	pids  []int
	// results
	c1, c64  stats
	exported float64 // ext_proc's spans exported per request at concurrency 64
	// split is the CPU per request at concurrency 64 by process: Envoy,
	// ext_proc (with xds), Redis.
	split []time.Duration
}

// tracingCost runs three gateways side by side, tracing off, on at 1 %
// and on at 100 % (every request kept), each exporting over OTLP/gRPC to
// its own collector on the client's core, interleaved in blocks like the
// main comparison, and returns the rows.
func tracingCost(ctx context.Context, pin pinning, n1, n64 int) ([]*tracedGateway, error) {
	root := mustRoot()
	gw, err := os.ReadFile(filepath.Join(root, "configs", "local", "gateway.yaml"))
	if err != nil {
		return nil, err
	}
	gws := []*tracedGateway{{name: "tracing off", ratio: -1}, {name: "tracing on, 1 % sampled", ratio: 0.01}, {name: "tracing on, 100 % sampled", ratio: 1}}
	defer func() {
		for _, g := range gws {
			if g.s != nil {
				g.s.Close()
			}
			if g.col != nil {
				g.col.Close()
			}
		}
	}()
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`)
	for _, g := range gws {
		o := stack.Options{CPUs: pin.paths, Node: true}
		if g.ratio >= 0 {
			dir, err := os.MkdirTemp("", "switchyard-bench-otelcol-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(dir)
			if g.col, err = harness.StartCollector(ctx, root, dir, pin.client); err != nil {
				return nil, err
			}
			o.Overlay = map[string]string{"gateway.yaml": string(gw) +
				"  tracing: {collector: \"" + g.col.GRPC + "\", sample_ratio: " + strconv.FormatFloat(g.ratio, 'f', -1, 64) + "}\n"}
		}
		if g.s, err = startStack(ctx, o); err != nil {
			return nil, err
		}
		if err := unlimitedQuota(g.s); err != nil {
			return nil, err
		}
		g.t = target{name: g.name, url: g.s.URL + "/v1/chat/completions", body: body, auth: "Bearer sk-local-demo"}
		g.pids = []int{g.s.PID("envoy-0"), g.s.PID("extproc-0"), g.s.PID("redis")}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	defer client.CloseIdleConnections()
	for _, g := range gws {
		if _, err := measure(client, g.t, 300, 4); err != nil {
			return nil, fmt.Errorf("warm-up %s: %w", g.name, err)
		}
	}
	const blocks = 10
	for _, c := range []struct{ conc, n int }{{1, n1}, {64, n64}} {
		lat := make([][]time.Duration, len(gws))
		dur := make([]time.Duration, len(gws))
		ticks := make([]int64, len(gws))
		split := make([][]int64, len(gws))
		exported := make([]float64, len(gws))
		for range blocks {
			for i, g := range gws {
				before, each := cpuOf(g.pids), ticksOf(g.pids)
				spans, _ := harness.MetricSum(g.s.Replicas[0].ExtProcMetrics+"/metrics", "switchyard_tracing_spans_exported_total")
				start := time.Now()
				l, err := measure(client, g.t, c.n/blocks, c.conc)
				if err != nil {
					return nil, fmt.Errorf("%s at concurrency %d: %w", g.name, c.conc, err)
				}
				dur[i] += time.Since(start)
				ticks[i] += cpuOf(g.pids) - before
				if split[i] == nil {
					split[i] = make([]int64, len(g.pids))
				}
				for j, v := range ticksOf(g.pids) {
					split[i][j] += v - each[j]
				}
				lat[i] = append(lat[i], l...)
				// ext_proc exports every second: what this block kept is
				// counted once its batch went out.
				if g.ratio >= 0 {
					time.Sleep(1200 * time.Millisecond)
					after, _ := harness.MetricSum(g.s.Replicas[0].ExtProcMetrics+"/metrics", "switchyard_tracing_spans_exported_total")
					exported[i] += after - spans
				}
			}
		}
		for i, g := range gws {
			perRequest := func(t int64) time.Duration {
				return time.Duration(float64(t) * float64(10*time.Millisecond) / float64(len(lat[i])))
			}
			st := summarize(lat[i], dur[i])
			st.CPUPerRequest = perRequest(ticks[i])
			if c.conc == 1 {
				g.c1 = st
				continue
			}
			g.c64, g.exported, g.split = st, exported[i]/float64(len(lat[i])), nil
			for _, t := range split[i] {
				g.split = append(g.split, perRequest(t))
			}
		}
	}
	return gws, nil
}

func renderTracing(w io.Writer, r result, gws []*tracedGateway) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## What tracing costs (`make bench`)\n\n")
	p("%s, %s. Three gateways as `make run` starts them (Envoy and the cmd/node process), with tracing off, and on at 1 %% and at 100 %% sampling, each exporting over OTLP/gRPC to its own OpenTelemetry Collector (e2e/otelcol) on the client's core; the same non-streamed chat completion, interleaved in blocks within one run. Pinning: %s. CPU is Envoy's, ext_proc's and Redis's per request; spans exported are ext_proc's (Envoy exports its own besides: one for the request and one per attempt, for the sampled requests only). The machine was shared with other developers' builds and tests, so compare the rows with each other rather than with other runs.\n\n", r.Date, r.Machine, r.Pinned)
	p("| Gateway | p50, concurrency 1 | p99, concurrency 1 | Throughput, concurrency 64 | CPU per request, concurrency 64 (Envoy / ext_proc / Redis) | ext_proc spans exported / request |\n|---|---|---|---|---|---|\n")
	for _, g := range gws {
		spans := "—"
		if g.ratio >= 0 {
			spans = fmt.Sprintf("%.2f", g.exported)
		}
		split := ""
		if len(g.split) == 3 {
			split = fmt.Sprintf(" (%s / %s / %s)", us(g.split[0]), us(g.split[1]), us(g.split[2]))
		}
		p("| %s | %s | %s | %.0f req/s | %s%s | %s |\n", g.name, ms(g.c1.P50), ms(g.c1.P99), g.c64.Throughput, us(g.c64.CPUPerRequest), split, spans)
	}
	off := gws[0].c64.CPUPerRequest
	for _, g := range gws[1:] {
		p("\n%s: %+.0f µs of CPU per request against tracing off (%+.0f %%).", g.name, float64(g.c64.CPUPerRequest-off)/float64(time.Microsecond), 100*float64(g.c64.CPUPerRequest-off)/float64(max(off, 1)))
	}
	p("\n")
}

// runTracing is the tracing comparison alone (-tracing).
func runTracing(write string, n1, n64 int) error {
	pin, err := pinSelf()
	if err != nil {
		return err
	}
	r := result{Date: time.Now().UTC().Format("2006-01-02"), Machine: benchdoc.Machine(), Pinned: pin.describe()}
	return writeTracing(write, r, pin, n1, n64)
}

// writeTracing measures what tracing costs and prints it, and writes it
// into write's tracing section when set.
func writeTracing(write string, r result, pin pinning, n1, n64 int) error {
	gws, err := tracingCost(context.Background(), pin, n1, n64)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	var out bytes.Buffer
	renderTracing(&out, r, gws)
	fmt.Print(out.String())
	if write != "" {
		return benchdoc.WriteSection(write, tracingSection, out.String())
	}
	return nil
}
