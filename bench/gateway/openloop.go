package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// openLoop sends t's request at rate per second for d whatever the
// answers' pace, each in its own goroutine, as independent users do: a
// request that stalls does not hold back the next one, so a stall shows in
// the tail instead of being hidden by a closed loop's waiting clients. It
// returns every request's latency, failed ones included, and the failures
// by kind.
func openLoop(client *http.Client, t target, rate float64, d time.Duration) ([]time.Duration, map[string]int) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		lat      = make([]time.Duration, 0, int(rate*d.Seconds())+1)
		failures = map[string]int{}
	)
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for next := start; time.Since(start) < d; next = next.Add(interval) {
		if w := time.Until(next); w > 0 {
			time.Sleep(w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Latency counts from when the request was due, so the
			// client's own lateness in sending it is not forgiven.
			err := do(client, t)
			took := time.Since(next)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures[errClass(err).Error()]++
			}
			lat = append(lat, took)
		}()
	}
	wg.Wait()
	return lat, failures
}

// streamRun sends n streamed requests with conc workers and returns each
// one's time to its first content event.
func streamRun(client *http.Client, t target, n, conc int) ([]time.Duration, error) {
	ttft := make([]time.Duration, n)
	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				d, err := firstToken(client, t)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
				}
				ttft[i] = d
			}
		}()
	}
	wg.Wait()
	return ttft, firstErr
}

// heldStreams is what a gateway did holding many slow streams open at once.
type heldStreams struct {
	served, failed int
	// failures counts the failed by what went wrong.
	failures map[string]int
	ttft     []time.Duration
	// The resident memory, kB, of the gateway's ext_proc and Envoy before
	// the streams and at their peak.
	extprocIdle, extprocPeak, envoyIdle, envoyPeak int64
}

// perStream is ext_proc's memory per open stream, kB.
func (h heldStreams) perStream(open int) float64 {
	return float64(h.extprocPeak-h.extprocIdle) / float64(open)
}

// holdStreams keeps open streams of t's (slow) streamed request open for d,
// each worker starting a new one as its last ends, and samples the
// resident memory of the gateway's ext_proc and Envoy as it goes.
func holdStreams(t target, open int, d time.Duration, envoy, extproc int) heldStreams {
	tr := &http.Transport{MaxIdleConnsPerHost: open, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	h := heldStreams{failures: map[string]int{}, extprocIdle: residentKB(extproc).RSS, envoyIdle: residentKB(envoy).RSS}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				x, e := residentKB(extproc).RSS, residentKB(envoy).RSS
				mu.Lock()
				h.extprocPeak, h.envoyPeak = max(h.extprocPeak, x), max(h.envoyPeak, e)
				mu.Unlock()
			}
		}
	}()
	start := time.Now()
	for i := range open {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the first requests over a second, as users arrive.
			time.Sleep(time.Duration(i) * time.Second / time.Duration(open))
			for time.Since(start) < d {
				ttft, err := wholeStream(client, t)
				mu.Lock()
				if err != nil {
					h.failed++
					h.failures[err.Error()]++
				} else {
					h.served++
					h.ttft = append(h.ttft, ttft)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	return h
}

// wholeStream reads a stream to its end: its time to the first content
// event, and an error unless it ended with [DONE].
func wholeStream(client *http.Client, t target) (time.Duration, error) {
	start := time.Now()
	resp, err := client.Do(newRequest(t))
	if err != nil {
		return 0, errClass(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	var first time.Duration
	done := false
	for sc.Scan() {
		line := sc.Text()
		if first == 0 && strings.HasPrefix(line, "data: {") {
			first = time.Since(start)
		}
		done = done || line == "data: [DONE]"
	}
	if err := sc.Err(); err != nil {
		return 0, errClass(err)
	}
	if !done {
		return 0, fmt.Errorf("stream ended before [DONE]")
	}
	return first, nil
}

// errClass names a client error without its addresses, so that failures
// of one kind count together.
func errClass(err error) error {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return fmt.Errorf("%s", s)
}

// slowStream is the provider of the many-streams row: each streamed
// answer's events a quarter of a second apart (max_tokens caps it at 16
// words), about as an LLM streams.
var slowStream = providersim.Fault{Mode: providersim.FaultSlowStream, Delay: providersim.Duration(250 * time.Millisecond), QuotaRemaining: providersim.Plenty()}

// holdAll holds openStreams slow streams open through the gateway and,
// when anchorBin is set, through the anchor, one after the other, each
// against a simulator that streams slowly.
func holdAll(ctx context.Context, pin pinning, envoy, anchorBin string) ([]heldStreams, error) {
	s, t, err := slowStreamStack(ctx, pin, nil)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ts := []target{t}
	pids := [][2]int{{s.PID("envoy-0"), s.PID("extproc-0")}}
	if anchorBin != "" {
		a, err := startAIGW(anchorBin, envoy, s.Dir, s.Sim.Addr("openai"), pin.paths)
		if err != nil {
			return nil, err
		}
		defer a.stop()
		at := target{name: "anchor", url: a.url(), body: t.body}
		if err := warmStreams(s, at); err != nil {
			return nil, err
		}
		ts = append(ts, at)
		pids = append(pids, [2]int{a.envoy.Process.Pid, a.extproc.Process.Pid})
	}
	var out []heldStreams
	for i, t := range ts {
		time.Sleep(idleWait)
		out = append(out, holdStreams(t, openStreams, holdFor, pids[i][0], pids[i][1]))
	}
	return out, nil
}

// slowStreamStack starts the gateway as make run does (the node), its
// bound on requests in flight raised above openStreams (configs/local's is
// set for a simulator that answers at once), warms it up, and makes its
// simulated openai stream slowly; it returns the slow streamed request.
func slowStreamStack(ctx context.Context, pin pinning, extprocArgs []string, env ...string) (*stack.Stack, target, error) {
	gw, err := os.ReadFile(filepath.Join(mustRoot(), "configs", "local", "gateway.yaml"))
	if err != nil {
		return nil, target{}, err
	}
	raised := inFlightBound.ReplaceAllString(string(gw), fmt.Sprintf("max_requests_in_flight: %d}", 4*openStreams))
	s, err := startStack(ctx, stack.Options{CPUs: pin.paths, Node: true, ExtProcArgs: extprocArgs, Env: env, Overlay: map[string]string{"gateway.yaml": raised}})
	if err != nil {
		return nil, target{}, err
	}
	body := []byte(`{"model":"gpt-4o-mini","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"tell me a long story about a gateway and its many streams, with every detail"}]}`)
	t := target{name: "gateway", url: s.URL + "/v1/chat/completions", body: body, auth: "Bearer sk-local-demo"}
	if err := warmStreams(s, t); err != nil {
		s.Close()
		return nil, target{}, err
	}
	return s, t, nil
}

// warmStreams sends t's streams at full speed, then makes s's simulated
// openai stream slowly.
func warmStreams(s *stack.Stack, t target) error {
	if err := unlimitedQuota(s); err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	defer client.CloseIdleConnections()
	if _, err := streamRun(client, t, 200, 8); err != nil {
		return fmt.Errorf("warm-up %s: %w", t.name, err)
	}
	return s.Sim.SetFault("openai", slowStream)
}
