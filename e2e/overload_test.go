package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// flood sends chat requests for model from workers goroutines for d (at
// most max requests), each given only timeout to finish, and counts what
// the clients saw: answered by status, or given up on.
type floodResult struct {
	byStatus map[int]int
	gaveUp   int
}

func flood(s string, model string, workers int, d, timeout time.Duration, max int64) floodResult {
	tr := &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: timeout}
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"flood"}]}`
	var (
		mu   sync.Mutex
		res  = floodResult{byStatus: map[int]int{}}
		sent atomic.Int64
		wg   sync.WaitGroup
	)
	stop := time.Now().Add(d)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) && sent.Add(1) <= max {
				req, _ := http.NewRequest(http.MethodPost, s+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+demoKey)
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				mu.Lock()
				if err != nil {
					res.gaveUp++
				} else {
					res.byStatus[resp.StatusCode]++
				}
				mu.Unlock()
				if resp != nil {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	return res
}

// TestFloodBlamesNoProvider is the reproduction: a flood beyond
// what the gateway serves, from clients that give up after a few
// milliseconds, in front of a healthy instant provider. The clients going
// away and the gateway's own queueing are nobody's fault but the gateway's:
// the provider stays healthy, its breaker closed, and 5 s after the flood
// every request is served by the model the client named.
func TestFloodBlamesNoProvider(t *testing.T) {
	s := startStack(t, defaultOptions())
	// Healthy, and with quota to spare: on a fast machine the flood serves
	// more than the simulator's default quota, and a provider with no quota
	// left is rightly avoided, which is not what this test is about.
	if err := s.Sim.SetFault("openai", providersim.Fault{QuotaRemaining: providersim.Plenty()}); err != nil {
		t.Fatal(err)
	}
	peak := sampleMax(s.Replicas[0].ExtProcMetrics+"/metrics", "process_resident_memory_bytes", 200*time.Millisecond)
	res := flood(s.URL, "gpt-4o-mini", 192, 4*time.Second, 80*time.Millisecond, 40_000)
	t.Logf("flood: answered %v, %d given up by the client; ext_proc's resident memory peaked at %.0f MB (sampled every 200 ms)",
		res.byStatus, res.gaveUp, peak()/(1<<20))
	if res.gaveUp == 0 {
		t.Fatal("no client gave up: the flood did not overload the gateway, so it proves nothing")
	}
	time.Sleep(5 * time.Second)
	if st := providerState(t, s, "openai"); st.Breaker.State != "closed" || st.Canary != nil {
		t.Errorf("after the flood openai's breaker is %s (canary %v), want closed", st.Breaker.State, st.Canary)
	}
	for i := range 20 {
		m, err := served(t, s, "gpt-4o-mini", "")
		if err != nil || m != "gpt-4o-mini" {
			t.Fatalf("request %d after the flood: served by %q (%v), want gpt-4o-mini", i, m, err)
		}
	}
}

// sampleMax reads a gauge at a metrics endpoint every interval from now
// on; the function it returns stops sampling and gives the largest value
// seen. It records a figure for the reliability table; it asserts nothing.
func sampleMax(url, name string, interval time.Duration) func() float64 {
	stop, done := make(chan struct{}), make(chan float64)
	go func() {
		most := 0.0
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if v, err := harness.MetricSum(url, name); err == nil {
				most = max(most, v)
			}
			select {
			case <-stop:
				done <- most
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 { close(stop); return <-done }
}

// TestClientTimeoutHeadersIgnored: a client that asks Envoy's router for a
// 1 ms per-try timeout (or its own retry rules) does not get it, so it
// cannot make a healthy provider's attempts time out and have it blamed.
func TestClientTimeoutHeadersIgnored(t *testing.T) {
	s := startStack(t, stack.Options{})
	if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(100 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		a := chatAs(t, fresh, s, demoKey, "gpt-4o-mini", 10,
			"x-envoy-upstream-rq-per-try-timeout-ms", "1", "x-envoy-upstream-rq-timeout-ms", "1",
			"x-envoy-retry-on", "5xx", "x-envoy-hedge-on-per-try-timeout", "true")
		if a.status != http.StatusOK || a.header.Get("x-switchyard-provider") != "openai" {
			t.Fatalf("%d from %q: %s; want 200 from openai, whatever the client's timeout headers say", a.status, a.header.Get("x-switchyard-provider"), a.body)
		}
	}
}

var inFlightBound = regexp.MustCompile(`max_requests_in_flight: \d+\}`)

// TestInFlightBound: past gateway.edge.max_requests_in_flight Envoy
// refuses at once, in the OpenAI envelope with retry-after, and ext_proc
// never hears of the refused requests (no message, no shed of its own);
// the provider is not blamed. A new bound, written to the policy while
// the gateway runs, holds without a restart (RTDS).
func TestInFlightBound(t *testing.T) {
	s := startStack(t, stack.Options{Overlay: map[string]string{"gateway.yaml": localGatewayWith(t, inFlightBound, "max_requests_in_flight: 3}")}})
	// A provider slow enough that the requests admitted are all still in
	// flight when the last of the burst arrives.
	if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(3 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	metrics := s.Replicas[0].ExtProcMetrics + "/metrics"
	messagesBefore, _ := harness.MetricSum(metrics, messageMetric)
	// Connections kept, as a client's pool keeps them: a refusal must not
	// cost the client (and the gateway) a new connection.
	keep := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 10}}
	defer keep.CloseIdleConnections()
	send := func() answer { return chatAs(t, keep, s, demoKey, "gpt-4o-mini", 10) }
	served, refused := 0, 0
	for _, a := range burst(10, 10, send) {
		switch {
		case a.status == http.StatusOK:
			served++
		case a.status == http.StatusServiceUnavailable && a.code() == "gateway_overloaded" && a.header.Get("Retry-After") != "":
			refused++
			if a.closed {
				t.Error("the gateway closed the connection of a refused request")
			}
		default:
			t.Errorf("got %d %s (retry-after %q), want 200 or 503 gateway_overloaded with retry-after", a.status, a.body, a.header.Get("Retry-After"))
		}
	}
	if served < 1 || served > 3 || refused != 10-served {
		t.Fatalf("%d served, %d refused of 10 at once under a bound of 3", served, refused)
	}
	messagesAfter, _ := harness.MetricSum(metrics, messageMetric)
	if got, most := messagesAfter-messagesBefore, float64(4*served); got > most {
		t.Errorf("ext_proc answered %.0f messages for %d requests served: the refused ones reached it", got, served)
	}
	if shed, _ := harness.MetricSum(metrics, "switchyard_extproc_shed_total"); shed != 0 {
		t.Errorf("ext_proc shed %.0f requests itself: Envoy's bound did not hold first", shed)
	}
	if st := providerState(t, s, "openai"); st.Breaker.State != "closed" {
		t.Errorf("openai's breaker is %s after refusals that were the gateway's own", st.Breaker.State)
	}

	// The stack's own gateway.yaml: it listens on the stack's port.
	current, err := s.ReadPolicyFile("gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raised := inFlightBound.ReplaceAllString(string(current), "max_requests_in_flight: 50}")
	if err := s.WritePolicyFile("gateway.yaml", []byte(raised)); err != nil {
		t.Fatal(err)
	}
	if err := eventually(30*time.Second, func() error {
		for _, a := range burst(10, 10, send) {
			if a.status != http.StatusOK {
				return fmt.Errorf("under a bound of 50: %d %s", a.status, a.body)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
