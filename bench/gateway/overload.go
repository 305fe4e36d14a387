package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard/switchyard/bench/benchdoc"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
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

// overloadRun is one configuration's floods and how it served after them.
type overloadRun struct {
	config   string
	phases   []overloadPhase
	after    int            // of 20 requests 5 s after the floods, served by the model named
	failures map[string]int // what the others got
	openai   string         // openai's entry in /admin/providers 5 s after the floods
}

// runOverload measures the gateway's capacity (closed loop, concurrency
// 64), then floods it open loop at 2× and 4× that rate, each request given
// timeout to finish, as a client that gives up would. Goodput is what was
// served in time; a gateway that sheds keeps it near capacity, one that
// queues lets every request grow late until none is served in time. It
// floods two configurations: the shipped one (configs/local: at most 256
// requests in flight, past which Envoy refuses before ext_proc works), and
// the same with the default bound of 1,024, the bound of a node behind
// providers that take seconds, which here lets a queue of a second form.
func runOverload(write string, d, timeout time.Duration, extprocArgs []string) error {
	ctx := context.Background()
	pin, err := pinSelf()
	if err != nil {
		return err
	}
	gw, err := os.ReadFile(filepath.Join(mustRoot(), "configs", "local", "gateway.yaml"))
	if err != nil {
		return err
	}
	defaultBound := fmt.Sprintf("max_requests_in_flight: %d}", policy.DefaultEdge().MaxRequestsInFlight)
	unbounded := inFlightBound.ReplaceAllString(string(gw), defaultBound)
	if unbounded == string(gw) {
		return errors.New("configs/local/gateway.yaml has no max_requests_in_flight to replace")
	}
	var (
		runs     []overloadRun
		capacity float64
	)
	for i, c := range []struct {
		name, gateway string
	}{
		{"shipped (configs/local: " + inFlightBound.FindString(string(gw)), ""},
		{"the default bound (" + defaultBound, unbounded},
	} {
		o := stack.Options{CPUs: pin.paths, ExtProcArgs: extprocArgs}
		if c.gateway != "" {
			o.Overlay = map[string]string{"gateway.yaml": c.gateway}
		}
		s, err := startStack(ctx, o)
		if err != nil {
			return err
		}
		run, err := overloadConfig(s, i == 0, &capacity, d, timeout, strings.TrimSuffix(c.name, "}")+")")
		s.Close()
		if err != nil {
			return err
		}
		runs = append(runs, run...)
	}
	one := inFlightBound.ReplaceAllString(string(gw), "max_requests_in_flight: 1}")
	refusal, err := refusalCost(stack.Options{CPUs: pin.paths, ExtProcArgs: extprocArgs, Overlay: map[string]string{"gateway.yaml": one}})
	if err != nil {
		return fmt.Errorf("refusal cost: %w", err)
	}
	out := renderOverload(capacity, refusal, d, timeout, extprocArgs, runs, pin)
	fmt.Print(out)
	if write == "" {
		return nil
	}
	return benchdoc.WriteSection(write, overloadSection, out)
}

// overloadConfig floods one running configuration. The first measures
// the capacity every flood is a multiple of, and floods the simulator
// straight as a control: where the control is not served in full, the
// client (or the simulator) could not keep up, and the gateway's rows
// measure the client as much as the gateway.
func overloadConfig(s *stack.Stack, first bool, capacity *float64, d, timeout time.Duration, config string) ([]overloadRun, error) {
	if err := unlimitedQuota(s); err != nil {
		return nil, err
	}
	t := gatewayTarget(s)
	var runs []overloadRun
	if first {
		c, err := measureCapacity(t)
		if err != nil {
			return nil, err
		}
		*capacity = c
		direct := target{name: "direct", url: "http://" + s.Sim.Addr("openai") + "/v1/chat/completions", body: t.body, auth: t.auth}
		control := overloadRun{config: "control: straight to the simulator", failures: map[string]int{}}
		for _, f := range []float64{2, 4} {
			p, err := flood(direct, f, c*f, d, timeout, s.PID("extproc-0"))
			if err != nil {
				return nil, err
			}
			p.peakExtProcRSS = 0
			control.phases = append(control.phases, p)
		}
		runs = append(runs, control)
	} else if _, err := measure(&http.Client{}, t, 200, 2); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	run, err := floodAll(s, t, *capacity, d, timeout, config)
	if err != nil {
		return nil, err
	}
	return append(runs, run), nil
}

// cost is the CPU time the gateway's processes spend on one request.
type cost struct{ envoy, extproc time.Duration }

// refusalCost is what one refusal at the bound on requests in flight costs
// the gateway's core: a stack bounded at one request in flight, held by a
// request its provider answers only after a minute, refusing a closed loop
// of 64 clients (connections kept) for 3 s. However early the refusal, it
// is the ceiling of goodput under a flood: at 4× capacity, the refusals of
// three requests in four share the core with the requests served.
func refusalCost(o stack.Options) (cost, error) {
	s, err := startStack(context.Background(), o)
	if err != nil {
		return cost{}, err
	}
	defer s.Close()
	if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(time.Minute), Count: 1}); err != nil {
		return cost{}, err
	}
	t := gatewayTarget(s)
	held := &http.Client{Timeout: 2 * time.Minute}
	go post(held, t) // it ends with the stack
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	defer c.CloseIdleConnections()
	// Until the held request has the one slot, the loop could be served.
	time.Sleep(500 * time.Millisecond)
	envoy, extproc := s.PID("envoy-0"), s.PID("extproc-0")
	e0, x0 := cpuTicks(envoy), cpuTicks(extproc)
	var (
		refused  atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	start := time.Now()
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < 3*time.Second {
				status, _, err := post(c, t)
				switch {
				case err != nil:
					fail(err)
				case status == http.StatusServiceUnavailable:
					refused.Add(1)
				default:
					fail(fmt.Errorf("a request at the bound got %d, want 503", status))
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return cost{}, firstErr
	}
	n := refused.Load()
	if n == 0 {
		return cost{}, errors.New("nothing was refused")
	}
	tick := 10 * time.Millisecond
	return cost{envoy: time.Duration(cpuTicks(envoy)-e0) * tick / time.Duration(n), extproc: time.Duration(cpuTicks(extproc)-x0) * tick / time.Duration(n)}, nil
}

var inFlightBound = regexp.MustCompile(`max_requests_in_flight: \d+\}`)

func gatewayTarget(s *stack.Stack) target {
	return target{name: "gateway", url: s.URL + "/v1/chat/completions", body: []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`), auth: "Bearer sk-local-demo"}
}

// measureCapacity is the closed-loop throughput of 64 clients over 3 s,
// after a warm-up.
func measureCapacity(t target) (float64, error) {
	closed := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	defer closed.CloseIdleConnections()
	if _, err := measure(closed, t, 2000, 64); err != nil {
		return 0, fmt.Errorf("warm-up: %w", err)
	}
	start := time.Now()
	n := 0
	for time.Since(start) < 3*time.Second {
		if _, err := measure(closed, t, 1000, 64); err != nil {
			return 0, fmt.Errorf("capacity: %w", err)
		}
		n += 1000
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// floodAll floods s at 2× and 4× capacity, then checks that it serves
// the model named 5 s later.
func floodAll(s *stack.Stack, t target, capacity float64, d, timeout time.Duration, config string) (overloadRun, error) {
	run := overloadRun{config: config, failures: map[string]int{}}
	for _, f := range []float64{2, 4} {
		time.Sleep(2 * time.Second)
		p, err := flood(t, f, capacity*f, d, timeout, s.PID("extproc-0"))
		if err != nil {
			return run, err
		}
		run.phases = append(run.phases, p)
	}
	time.Sleep(5 * time.Second)
	run.openai = openaiState(s)
	for range 20 {
		model, err := servedModel(t)
		switch {
		case err != nil:
			run.failures[err.Error()]++
		case model != benchModel:
			run.failures["served by "+model]++
		default:
			run.after++
		}
	}
	return run, nil
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
			status, _, err := post(c, t)
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

// openaiState sums up openai's entry in the admin API's provider list:
// its breaker, its health and the bench model's, to tell whether the
// flood was blamed on it.
func openaiState(s *stack.Stack) string {
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/admin/providers", nil)
	req.Header.Set("Authorization", "Bearer sk-local-admin")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	type state struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
	}
	var list struct {
		Data []struct {
			Provider string `json:"provider"`
			state
			Breaker state `json:"breaker"`
			Models  []struct {
				Model string `json:"model"`
				state
			} `json:"models"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return err.Error()
	}
	for _, p := range list.Data {
		if p.Provider != "openai" {
			continue
		}
		out := fmt.Sprintf("breaker %s, provider %s", p.Breaker.State, p.state.State)
		for _, m := range p.Models {
			if m.Model == benchModel {
				out += fmt.Sprintf(", %s %s", m.Model, m.State)
				if m.Reason != "" {
					out += " (" + m.Reason + ")"
				}
			}
		}
		return out
	}
	return "not listed"
}

func servedModel(t target) (string, error) {
	status, model, err := post(&http.Client{Timeout: 10 * time.Second}, t)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d", status)
	}
	return model, err
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

func renderOverload(capacity float64, refusal cost, d, timeout time.Duration, extprocArgs []string, runs []overloadRun, pin pinning) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Overload (`make overload`)\n\n")
	p("%s, %s, %s. The gateway as `make bench` runs it (%s). Capacity: a closed loop of 64 clients for 3 s. Then an open-loop flood for %s at 2× and at 4× that rate, each request given %s to finish, as a client that gives up would. Goodput is the requests answered 200 within that time, per second. The client keeps its connections (up to 4,096 idle) and opens more as it needs them.\n\n",
		time.Now().UTC().Format("2006-01-02"), benchdoc.Machine(), runtime.Version(), pin.describe(), d, timeout)
	if len(extprocArgs) > 0 {
		p("ext_proc ran with `%s`.\n\n", strings.Join(extprocArgs, " "))
	}
	served := time.Duration(float64(time.Second) / capacity)
	r := refusal.envoy + refusal.extproc
	p("Capacity: %.0f req/s, so a request served takes about %s of the core. A refusal at the bound on requests in flight takes %s (Envoy %s, ext_proc %s; a closed loop of 64 clients against a bound of 1, for 3 s): at 4×, the refusals of three requests in four would take %.0f %% of the core with nothing else to do, the most goodput the core allows being about %.0f %% of capacity (%.0f %% at 2×).\n\n",
		capacity, us(served), us(r), us(refusal.envoy), us(refusal.extproc), 100*3*capacity*r.Seconds(), 100*ceiling(4, r, served), 100*ceiling(2, r, served))
	p("| Configuration | Offered | Sent | Served in time | Goodput | of capacity | Refused (429/503) | refusal p50 / p99 | served p50 / p99 | Other answers | Given up | ext_proc peak RSS |\n|---|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|\n")
	for _, r := range runs {
		for _, ph := range r.phases {
			p("| %s | %.0f× (%d in %.1f s) | %d | %d | %.0f req/s | %.0f %% | %d | %s / %s | %s / %s | %d | %d | %d MB |\n",
				r.config, ph.factor, ph.offered, ph.elapsed.Seconds(), ph.sent, ph.ok, ph.goodput(), 100*ph.goodput()/capacity, ph.refused,
				ms(quantile(ph.refusalLatencies, 0.5)), ms(quantile(ph.refusalLatencies, 0.99)),
				ms(quantile(ph.okLatencies, 0.5)), ms(quantile(ph.okLatencies, 0.99)),
				ph.other, ph.gaveUp, ph.peakExtProcRSS/1024)
		}
	}
	p("\n")
	for _, r := range runs[1:] {
		p("%s: 5 s after the floods, %d of 20 requests were served by the model they named", r.config, r.after)
		seen := make([]string, 0, len(r.failures))
		for f := range r.failures {
			seen = append(seen, f)
		}
		sort.Strings(seen)
		for _, f := range seen {
			p("; %d: %s", r.failures[f], f)
		}
		p(". openai then: %s.\n\n", r.openai)
	}
	return b.String()
}

// ceiling is the share of capacity a core can serve under a flood of
// factor × capacity when each refusal costs r and each request served s:
// g·s + (factor − g)·r = s, in units of capacity.
func ceiling(factor float64, r, s time.Duration) float64 {
	return min(1, (1-factor*r.Seconds()/s.Seconds())/(1-r.Seconds()/s.Seconds()))
}
