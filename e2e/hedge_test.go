package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/state/ledger"
)

// hedgeAfter is the hedge's delay on the test's chat route.
const hedgeAfter = 300 * time.Millisecond

// TestHedge: a chat route that hedges after 300 ms. gpt-4o-mini's plan is
// openai, then anthropic. A slow first provider loses to the hedge; a
// first provider slower than the delay but faster than the hedge wins
// anyway; a failing provider on either side leaves the other's answer;
// each answer says how the hedge went (X-Switchyard-Hedge), and its
// ledger row charges every attempt that reached a provider: the winner's
// usage, and the cancelled attempt's estimate, as estimated.
func TestHedge(t *testing.T) {
	o := withHealth(t, `
    min_samples: 100000
    breaker: {consecutive_failures: 0, failure_ratio: 0}
    active_checks: {interval: 0s}
`)
	o.Overlay["routes.yaml"] = chatRouteWith(t, "hedge: {after: 300ms, max: 1}")
	s := startStack(t, o)
	p, err := policy.Load(s.PolicyDir)
	if err != nil {
		t.Fatal(err)
	}
	mini, haiku := p.Model("gpt-4o-mini"), p.Model("claude-3-5-haiku")

	tests := []struct {
		name           string
		stream         bool
		openai, anthro providersim.Fault
		wantProvider   string
		wantHedge      string
		wantReasons    []string
		// within bounds how long the answer may take.
		within time.Duration
		// lost is the model whose cancelled attempt is charged, nil if none.
		lost *policy.Model
	}{
		{name: "the first answers in time", wantProvider: "openai",
			wantHedge: "after=300ms; attempts=1; won=1", within: hedgeAfter},
		{name: "a slow first provider loses to the hedge",
			openai: providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(3 * time.Second)}, wantProvider: "anthropic",
			wantHedge: "after=300ms; attempts=2; won=2", wantReasons: []string{"openai/gpt-4o-mini: hedge lost"}, within: 2 * time.Second, lost: mini},
		{name: "the first still wins after the hedge started",
			openai: providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(700 * time.Millisecond)},
			anthro: providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(3 * time.Second)}, wantProvider: "openai",
			wantHedge: "after=300ms; attempts=2; won=1", wantReasons: []string{"anthropic/claude-3-5-haiku: hedge lost"}, within: 2 * time.Second, lost: haiku},
		{name: "a failing first provider fails over",
			openai: providersim.Fault{Mode: providersim.FaultStatus, Status: 500}, wantProvider: "anthropic",
			wantHedge: "after=300ms; attempts=2; won=2", wantReasons: []string{"openai/gpt-4o-mini: 500"}, within: hedgeAfter},
		{name: "a failing hedge leaves the slow first's answer",
			openai: providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(time.Second)},
			anthro: providersim.Fault{Mode: providersim.FaultStatus, Status: 500}, wantProvider: "openai",
			wantHedge: "after=300ms; attempts=2; won=1", wantReasons: []string{"anthropic/claude-3-5-haiku: 500"}, within: 2 * time.Second},
		{name: "a slow stream loses to the hedge", stream: true,
			openai: providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(3 * time.Second)}, wantProvider: "anthropic",
			wantHedge: "after=300ms; attempts=2; won=2", wantReasons: []string{"openai/gpt-4o-mini: hedge lost"}, within: 2 * time.Second, lost: mini},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Sim.Reset(); err != nil {
				t.Fatal(err)
			}
			for provider, f := range map[string]providersim.Fault{"openai": tt.openai, "anthropic": tt.anthro} {
				if f.Mode != "" {
					if err := s.Sim.SetFault(provider, f); err != nil {
						t.Fatal(err)
					}
				}
			}
			start := time.Now()
			resp := chatRequest(t, s, tt.stream, "race me")
			a := readAnswer(t, resp)
			took := time.Since(start)
			if a.status != http.StatusOK {
				t.Fatalf("status %d: %s", a.status, a.body)
			}
			if took > tt.within {
				t.Errorf("answered in %s, want within %s", took, tt.within)
			}
			if got := a.header.Get("x-switchyard-provider"); got != tt.wantProvider {
				t.Errorf("served by %s, want %s", got, tt.wantProvider)
			}
			if got := a.header.Get("x-switchyard-hedge"); got != tt.wantHedge {
				t.Errorf("x-switchyard-hedge %q, want %q", got, tt.wantHedge)
			}
			if a.header.Get("x-switchyard-attempt") != "" {
				t.Error("the attempt's mark reached the client")
			}
			if tt.stream && !strings.Contains(string(a.body), "data: [DONE]") {
				t.Errorf("stream did not end: %s", a.body)
			}
			rec := awaitRecord(t, s, a.header.Get("x-request-id"))
			if !slices.Equal(rec.FallbackReasons, tt.wantReasons) {
				t.Errorf("ledger reasons %q, want %q", rec.FallbackReasons, tt.wantReasons)
			}
			served := p.Model(rec.ServedModel)
			want := served.Price.Micros(policy.Tokens{Prompt: int(rec.InputTokens), Completion: int(rec.OutputTokens)})
			if tt.lost != nil {
				lost := policy.Tokens{Prompt: int(rec.InputTokens)}
				if !tt.stream {
					lost.Completion = int(rec.OutputTokens)
				}
				want += tt.lost.Price.Micros(lost)
			}
			if rec.CostMicros != want || rec.UsageEstimated != (tt.lost != nil) {
				t.Errorf("ledger cost %d µ$ (estimated %t), want %d (estimated %t): %s", rec.CostMicros, rec.UsageEstimated, want, tt.lost != nil, describeRecord(rec))
			}
		})
	}
}

// readAnswer reads a whole answer, streamed or not.
func readAnswer(t *testing.T, resp *http.Response) answer {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: []byte(b.String())}
}

func describeRecord(r ledger.Record) string {
	return fmt.Sprintf("%s/%s attempts=%d in=%d out=%d reasons=%q", r.Provider, r.ServedModel, r.Attempts, r.InputTokens, r.OutputTokens, r.FallbackReasons)
}

// TestHedgeOverTLS: the hedge's composite cluster reaches each provider
// through the provider's own cluster, its TLS included: the real-providers
// policy, hedging its chat route, against HTTPS upstreams that check SNI
// and keys. A slow anthropic loses claude-3-5-haiku's race to openai.
func TestHedgeOverTLS(t *testing.T) {
	ca := testCA(t)
	var cfg providersim.Config
	for name := range realHosts {
		cfg.Providers = append(cfg.Providers, providersim.ProviderConfig{
			Name: name, Kind: providersim.Kind(name), ExpectKey: realKeys[name].key, TLS: ca.serverTLS,
		})
	}
	up, err := providersim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Close() })
	upstream, env := map[string]string{}, []string{}
	for name := range realHosts {
		_, port, _ := net.SplitHostPort(up.Addr(name))
		upstream[name] = "https://localhost:" + port
		env = append(env, realKeys[name].env+"="+realKeys[name].key)
	}
	o := realProvidersOptions(t, upstream, env, ca.file)
	routes, err := os.ReadFile(filepath.Join(moduleRoot(t), "configs", "examples", "real-providers", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const api = "    api: chat_completions\n"
	o.Overlay["routes.yaml"] = strings.Replace(string(routes), api, api+"    hedge: {after: 300ms, max: 1}\n", 1)
	s := startStack(t, o)
	if err := up.SetFault("anthropic", providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(3 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"claude-3-5-haiku","messages":[{"role":"user","content":"race me"}]}`))
	req.Header.Set("Authorization", "Bearer "+realTenantKey)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	a := readAnswer(t, resp)
	if a.status != http.StatusOK || a.header.Get("x-switchyard-provider") != "openai" ||
		a.header.Get("x-switchyard-hedge") != "after=300ms; attempts=2; won=2" {
		t.Fatalf("%d from %s (%s): %s", a.status, a.header.Get("x-switchyard-provider"), a.header.Get("x-switchyard-hedge"), a.body)
	}
	st, err := up.Stats("openai")
	if err != nil || len(st.Recent) == 0 || st.Recent[len(st.Recent)-1].SNI != "localhost" {
		t.Errorf("openai's hedge arrived without its SNI: %+v, %v", st.Recent, err)
	}
}
