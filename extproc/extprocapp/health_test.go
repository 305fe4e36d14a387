package extprocapp

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/store"
)

func newMonitor(t *testing.T) *health.Monitor {
	t.Helper()
	m, err := health.New(health.DefaultConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Track(map[string][]string{"anthropic": {"claude"}, "openai": {"gpt"}})
	return m
}

func breakerOf(m *health.Monitor, provider string) health.BreakerStatus {
	for _, p := range m.Snapshot() {
		if p.Provider == provider {
			return p.Breaker
		}
	}
	return health.BreakerStatus{}
}

// TestOutageShare: an outage replica a sees reaches replica b through the
// shared board, once; a's own record and records older than the open
// timeout are not applied.
func TestOutageShare(t *testing.T) {
	ctx := context.Background()
	board := store.NewMemory(store.Options{})
	log := slog.New(slog.DiscardHandler)
	openTimeout := func() time.Duration { return 30 * time.Second }
	ma, mb := newMonitor(t), newMonitor(t)
	a := newOutageShare(board, ma, "a", openTimeout, log)
	b := newOutageShare(board, mb, "b", openTimeout, log)

	for range 5 {
		ma.Observe(health.Observation{Provider: "anthropic", Model: "claude", Status: 503, Quota: -1})
	}
	var o health.Outage
	select {
	case o = <-a.out:
	default:
		t.Fatal("a's breaker opened and nothing was queued to share")
	}
	a.publish(ctx, o)
	a.apply(ctx) // its own record
	if got := breakerOf(ma, "anthropic").Reason; got != "5 consecutive failures" {
		t.Errorf("a applied its own record: reason %q", got)
	}
	b.apply(ctx)
	if got := breakerOf(mb, "anthropic"); got.State != health.BreakerOpen || got.Reason != "replica a: 5 consecutive failures" {
		t.Errorf("b after reading the board: %+v", got)
	}
	if got := breakerOf(mb, "openai").State; got != health.BreakerClosed {
		t.Errorf("b's other provider: %v", got)
	}
	select {
	case o := <-b.out:
		t.Errorf("b queued a report to share again: %+v", o)
	default:
	}

	// A replica that starts after the open timeout ignores the old record.
	mc := newMonitor(t)
	c := newOutageShare(board, mc, "c", openTimeout, log)
	c.now = func() time.Time { return time.Now().Add(31 * time.Second) }
	c.apply(ctx)
	if got := breakerOf(mc, "anthropic").State; got != health.BreakerClosed {
		t.Errorf("a late replica applied an expired outage: %v", got)
	}
	// A record that is not an outage (another writer, an old format) is
	// skipped.
	if err := board.SetHealth(ctx, "openai", "healthy"); err != nil {
		t.Fatal(err)
	}
	b.apply(ctx)
	if got := breakerOf(mb, "openai").State; got != health.BreakerClosed {
		t.Errorf("a non-outage record opened the breaker: %v", got)
	}
}

type fixedKey string

func (k fixedKey) Resolve(policy.SecretRef) (string, error) { return string(k), nil }

// TestCheckerKinds: each kind's check is a call its simulator (which
// speaks the real wire format and insists on the key) answers with 200; a
// wrong key is the provider's 401, and a provider that is down is a
// refused connection. No error names the key.
func TestCheckerKinds(t *testing.T) {
	const key = "check-key-123"
	var cfgs []providersim.ProviderConfig
	for _, k := range providersim.Kinds() {
		cfgs = append(cfgs, providersim.ProviderConfig{Name: string(k), Kind: k, ExpectKey: key})
	}
	sim, err := providersim.Start(t.Context(), providersim.Config{Providers: cfgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	prov := func(k providersim.Kind) *policy.Provider {
		host, port, _ := net.SplitHostPort(sim.Addr(string(k)))
		n, _ := strconv.Atoi(port)
		return &policy.Provider{Name: string(k), Kind: policy.Kind(k), Scheme: "http", Host: host, Port: n,
			APIVersion: "2024-10-21", Keys: []policy.SecretRef{{Env: "UNUSED"}}}
	}
	for _, k := range providersim.Kinds() {
		t.Run(string(k), func(t *testing.T) {
			p := prov(k)
			good := newChecker(nil, nil, fixedKey(key), slog.New(slog.DiscardHandler)).check(t.Context(), p, 2*time.Second)
			if good.Status != 200 || good.Failed() || good.Error != "" {
				t.Errorf("with the key: %+v", good)
			}
			st, err := sim.Stats(string(k))
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Recent) == 0 || st.Recent[len(st.Recent)-1].Method != "GET" {
				t.Errorf("the simulator saw %+v, want a GET", st.Recent)
			}
			bad := newChecker(nil, nil, fixedKey("wrong"), slog.New(slog.DiscardHandler)).check(t.Context(), p, 2*time.Second)
			// 401 (Gemini: 400 "API key not valid"): the provider is up.
			if bad.Status < 400 || bad.Status == 429 || bad.Status >= 500 || bad.Failed() {
				t.Errorf("with a wrong key: %+v, want the kind's auth error", bad)
			}
			if err := sim.SetFault(string(k), providersim.Fault{Mode: providersim.FaultDown}); err != nil {
				t.Fatal(err)
			}
			down := newChecker(nil, nil, fixedKey(key), slog.New(slog.DiscardHandler)).check(t.Context(), p, 2*time.Second)
			_ = sim.ClearFault(string(k))
			if down.Failure != health.ConnectFailure || !down.Failed() || !strings.Contains(down.Error, "refused") {
				t.Errorf("down: %+v", down)
			}
			for _, r := range []health.CheckResult{good, bad, down} {
				if strings.Contains(r.Error, key) {
					t.Errorf("an error names the key: %q", r.Error)
				}
			}
		})
	}
}

// TestCheckerRun: the loop checks the providers the monitor says are due,
// and the results reach the monitor.
func TestCheckerRun(t *testing.T) {
	sim, err := providersim.Start(t.Context(), providersim.Config{Providers: []providersim.ProviderConfig{
		{Name: "openai", Kind: providersim.KindOpenAI}, {Name: "anthropic", Kind: providersim.KindAnthropic},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	dir := t.TempDir()
	yaml := "gateway:\n  health: {active_checks: {interval: 50ms, timeout: 40ms}}\nproviders:\n" +
		"  - {name: openai, kind: openai, base_url: " + sim.URL("openai") + "}\n" +
		"  - {name: anthropic, kind: anthropic, base_url: " + sim.URL("anthropic") + "}\n" +
		"models:\n  - {name: gpt, provider: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}\n" +
		"  - {name: claude, provider: anthropic, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}\n"
	if err := writeFile(dir+"/p.yaml", yaml); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	mon := newMonitor(t)
	if err := sim.SetFault("anthropic", providersim.Fault{Mode: providersim.FaultDown}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		newChecker(mon, func() *policy.Policy { return p }, nil, slog.New(slog.DiscardHandler)).run(ctx, 10*time.Millisecond)
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var okOpenAI, anthropicOpen bool
		for _, s := range mon.Snapshot() {
			switch s.Provider {
			case "openai":
				okOpenAI = s.LastCheck != nil && s.LastCheck.OK && !s.LastSuccess.IsZero()
			case "anthropic":
				anthropicOpen = s.Breaker.State == health.BreakerOpen && s.LastCheck != nil && !s.LastCheck.OK
			}
		}
		if okOpenAI && anthropicOpen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("checks did not reach the monitor: %+v", mon.Snapshot())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
