package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	docs "github.com/switchyard/switchyard/bench/report"
	"github.com/switchyard/switchyard/e2e/harness"
)

const overloadSection = "gateway-overload"

// overloadPhase is one open-loop flood at a multiple of the measured
// capacity and what its clients saw.
type overloadPhase struct {
	factor           float64
	offered, sent    int
	ok, refused      int // answered 200 within the timeout; answered 429 or 503
	other, gaveUp    int // any other answer; no answer within the timeout
	clientCapped     int // not sent: the client's own bound on outstanding requests
	refusalLatencies []time.Duration
	okLatencies      []time.Duration
	peakExtProcRSS   int64 // kB
	elapsed          time.Duration
}

func (p overloadPhase) goodput() float64 { return float64(p.ok) / p.elapsed.Seconds() }

// runOverload measures the gateway's capacity (closed loop, concurrency
// 64), then floods it open loop at 2× and 4× that rate, each request given
// timeout to finish, as a client that gives up would. Goodput is what was
// served in time; a gateway that sheds keeps it near capacity, one that
// queues lets every request grow late until none is served in time.
func runOverload(write string, d, timeout time.Duration, extprocArgs []string) error {
	ctx := context.Background()
	pin, err := pinSelf()
	if err != nil {
		return err
	}
	s, err := harness.Start(ctx, harness.Options{CPUs: pin.paths, ExtProcArgs: extprocArgs})
	if err != nil {
		return err
	}
	defer s.Close()
	t := target{name: "gateway", url: s.URL + "/v1/chat/completions", body: []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`), auth: "Bearer sk-local-demo"}
	closed := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	if _, err := measure(closed, t, 2000, 64); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	start := time.Now()
	n := 0
	for time.Since(start) < 3*time.Second {
		if _, err := measure(closed, t, 1000, 64); err != nil {
			return fmt.Errorf("capacity: %w", err)
		}
		n += 1000
	}
	capacity := float64(n) / time.Since(start).Seconds()
	closed.CloseIdleConnections()

	var phases []overloadPhase
	for _, f := range []float64{2, 4} {
		time.Sleep(2 * time.Second)
		p, err := flood(t, f, capacity*f, d, timeout, s.PID("extproc-0"))
		if err != nil {
			return err
		}
		phases = append(phases, p)
	}
	time.Sleep(5 * time.Second)
	after, failures := 0, map[string]int{}
	for range 20 {
		model, err := servedModel(t)
		switch {
		case err != nil:
			failures[err.Error()]++
		case model != "gpt-4o-mini":
			failures["served by "+model]++
		default:
			after++
		}
	}
	out := renderOverload(capacity, d, timeout, extprocArgs, phases, after, failures, pin)
	fmt.Print(out)
	if write == "" {
		return nil
	}
	return docs.WriteSection(write, overloadSection, out)
}

// flood sends requests at rate per second for d, each in its own
// goroutine, and samples ext_proc's resident memory as it goes.
func flood(t target, factor, rate float64, d, timeout time.Duration, extproc int) (overloadPhase, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 4096, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: timeout}
	// More outstanding than the rate allows in one timeout is the client's
	// own failure, not the gateway's.
	maxOutstanding := int64(rate*timeout.Seconds()) + 64
	p := overloadPhase{factor: factor}
	var (
		mu          sync.Mutex
		wg          sync.WaitGroup
		outstanding atomic.Int64
		peak        atomic.Int64
	)
	stopSampling := make(chan struct{})
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				if r := residentKB(extproc).RSS; r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	for next := start; time.Since(start) < d; next = next.Add(interval) {
		if w := time.Until(next); w > 0 {
			time.Sleep(w)
		}
		p.offered++
		if outstanding.Add(1) > maxOutstanding {
			outstanding.Add(-1)
			p.clientCapped++
			continue
		}
		p.sent++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer outstanding.Add(-1)
			began := time.Now()
			status, err := send(c, t)
			took := time.Since(began)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				p.gaveUp++
			case status == http.StatusOK:
				p.ok++
				p.okLatencies = append(p.okLatencies, took)
			case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
				p.refused++
				p.refusalLatencies = append(p.refusalLatencies, took)
			default:
				p.other++
			}
		}()
	}
	p.elapsed = time.Since(start)
	wg.Wait()
	close(stopSampling)
	p.peakExtProcRSS = peak.Load()
	runtime.GC()
	return p, nil
}

func send(c *http.Client, t target) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, t.url, bytes.NewReader(t.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", t.auth)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

func servedModel(t target) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, t.url, bytes.NewReader(t.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", t.auth)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	return resp.Header.Get("X-Model-Used"), nil
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

func renderOverload(capacity float64, d, timeout time.Duration, extprocArgs []string, phases []overloadPhase, after int, failures map[string]int, pin pinning) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Overload (`make overload`)\n\n")
	p("%s, %s, %s. The gateway as `make bench` runs it (%s). Capacity: a closed loop of 64 clients for 3 s. Then an open-loop flood for %s at 2× and at 4× that rate, each request in its own connection's turn and given %s to finish, as a client that gives up would. Goodput is the requests answered 200 within that time, per second.\n\n",
		time.Now().UTC().Format("2006-01-02"), docs.Machine(), runtime.Version(), pin.describe(), d, timeout)
	if len(extprocArgs) > 0 {
		p("ext_proc ran with `%s`.\n\n", strings.Join(extprocArgs, " "))
	}
	p("Capacity: %.0f req/s.\n\n", capacity)
	p("| Offered | Sent | Served in time | Goodput | of capacity | Refused (429/503) | refusal p50 / p99 | served p50 / p99 | Other answers | Given up | ext_proc peak RSS |\n|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|\n")
	for _, ph := range phases {
		p("| %.0f× (%d in %.1f s) | %d | %d | %.0f req/s | %.0f %% | %d | %s / %s | %s / %s | %d | %d | %d MB |\n",
			ph.factor, ph.offered, ph.elapsed.Seconds(), ph.sent, ph.ok, ph.goodput(), 100*ph.goodput()/capacity, ph.refused,
			ms(quantile(ph.refusalLatencies, 0.5)), ms(quantile(ph.refusalLatencies, 0.99)),
			ms(quantile(ph.okLatencies, 0.5)), ms(quantile(ph.okLatencies, 0.99)),
			ph.other, ph.gaveUp, ph.peakExtProcRSS/1024)
	}
	p("\n5 s after the floods, %d of 20 requests were served by the model they named", after)
	seen := make([]string, 0, len(failures))
	for f := range failures {
		seen = append(seen, f)
	}
	sort.Strings(seen)
	for _, f := range seen {
		p("; %d: %s", failures[f], f)
	}
	p(".\n")
	return b.String()
}
