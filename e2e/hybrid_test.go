package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// hybridStack is configs/local with its chat route's hybrid mode set to
// hybrid (a YAML flow mapping), health verdicts off.
func hybridStack(t *testing.T, hybrid string) (*stack.Stack, *policy.Policy) {
	t.Helper()
	o := withHealth(t, `
    min_samples: 100000
    breaker: {consecutive_failures: 0, failure_ratio: 0}
    active_checks: {interval: 0s}
`)
	o.Overlay["routes.yaml"] = chatRouteWith(t, "hybrid: "+hybrid)
	s := startStack(t, o)
	p, err := policy.Load(s.PolicyDir)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// askHybrid sends a whole chat completion for the hybrid model.
func askHybrid(t *testing.T, s *stack.Stack, content string, stream bool) answer {
	t.Helper()
	body := `{"model":"hybrid","messages":[{"role":"user","content":"` + content + `"}]}`
	if stream {
		body = `{"model":"hybrid","stream":true,"messages":[{"role":"user","content":"` + content + `"}]}`
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+demoKey)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, resp)
}

// sims sets each provider's fault (none for a zero one) after a reset.
func sims(t *testing.T, s *stack.Stack, faults map[string]providersim.Fault) {
	t.Helper()
	if err := s.Sim.Reset(); err != nil {
		t.Fatal(err)
	}
	for p, f := range faults {
		if err := s.Sim.SetFault(p, f); err != nil {
			t.Fatal(err)
		}
	}
}

// servedCost is what provider's simulator served, at model's price.
func servedCost(t *testing.T, s *stack.Stack, provider string, m *policy.Model) int64 {
	t.Helper()
	st, err := s.Sim.Stats(provider)
	if err != nil {
		t.Fatal(err)
	}
	return m.Price.Micros(policy.Tokens{Prompt: st.PromptTokens, Completion: st.CompletionTokens})
}

// TestHybridCheapestAcceptable: the request goes to three models at once;
// gemini fails, so the cheaper of the two acceptable answers is kept. The
// client gets it with the pick in X-Switchyard-Hybrid; the ledger row
// charges both answers and names why each other call did not give the
// answer.
func TestHybridCheapestAcceptable(t *testing.T) {
	s, p := hybridStack(t, "{models: [claude-3-5-haiku, gpt-4o-mini, gemini-2.0-flash], pick: cheapest-acceptable}")
	sims(t, s, map[string]providersim.Fault{"gemini": {Mode: providersim.FaultStatus, Status: 500}})
	a := askHybrid(t, s, "which is cheapest?", false)
	if a.status != http.StatusOK || a.header.Get("x-switchyard-model") != "gpt-4o-mini" ||
		a.header.Get("x-switchyard-hybrid") != "picked=gpt-4o-mini; by=cheapest-acceptable; answers=2/3" {
		t.Fatalf("%d, model %s, %q: %s", a.status, a.header.Get("x-switchyard-model"), a.header.Get("x-switchyard-hybrid"), a.body)
	}
	if !strings.Contains(string(a.body), `"object":"chat.completion"`) || !strings.Contains(string(a.body), "Hello from gpt-4o-mini") {
		t.Errorf("answer: %s", a.body)
	}
	rec := awaitRecord(t, s, a.header.Get("x-request-id"))
	want := servedCost(t, s, "openai", p.Model("gpt-4o-mini")) + servedCost(t, s, "anthropic", p.Model("claude-3-5-haiku"))
	wantReasons := []string{"anthropic/claude-3-5-haiku: hybrid: not picked", "gemini/gemini-2.0-flash: 500"}
	if rec.ServedModel != "gpt-4o-mini" || rec.Attempts != 3 || rec.CostMicros != want || rec.UsageEstimated || !slices.Equal(rec.FallbackReasons, wantReasons) {
		t.Errorf("ledger %s cost %d (estimated %t), want cost %d, reasons %q", describeRecord(rec), rec.CostMicros, rec.UsageEstimated, want, wantReasons)
	}
}

// TestHybridFirst: the first acceptable answer is kept at once and the
// slower calls are cancelled; they are charged as estimated.
func TestHybridFirst(t *testing.T) {
	s, p := hybridStack(t, "{models: [gpt-4o-mini, claude-3-5-haiku, gemini-2.0-flash], pick: first}")
	slow := providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(3 * time.Second)}
	sims(t, s, map[string]providersim.Fault{"openai": slow, "gemini": slow})
	start := time.Now()
	a := askHybrid(t, s, "who is first?", false)
	if took := time.Since(start); a.status != http.StatusOK || a.header.Get("x-switchyard-model") != "claude-3-5-haiku" || took > 2*time.Second {
		t.Fatalf("%d from %s in %s: %s", a.status, a.header.Get("x-switchyard-model"), took, a.body)
	}
	rec := awaitRecord(t, s, a.header.Get("x-request-id"))
	wantReasons := []string{"openai/gpt-4o-mini: hybrid: cancelled", "gemini/gemini-2.0-flash: hybrid: cancelled"}
	// The winner's tokens at each cancelled model's price, beside its own.
	won := policy.Tokens{Prompt: int(rec.InputTokens), Completion: int(rec.OutputTokens)}
	want := p.Model("claude-3-5-haiku").Price.Micros(won) + p.Model("gpt-4o-mini").Price.Micros(won) + p.Model("gemini-2.0-flash").Price.Micros(won)
	if rec.Attempts != 3 || !rec.UsageEstimated || rec.CostMicros != want || !slices.Equal(rec.FallbackReasons, wantReasons) {
		t.Errorf("ledger %s cost %d (estimated %t), want %d, reasons %q", describeRecord(rec), rec.CostMicros, rec.UsageEstimated, want, wantReasons)
	}
}

// TestHybridJudge: every answer comes back, the judge model picks one
// (the simulator judges as [[pick 2]] tells it), and its call is charged
// with the others; a stream is refused, naming the field.
func TestHybridJudge(t *testing.T) {
	s, _ := hybridStack(t, "{models: [gpt-4o-mini, claude-3-5-haiku, gemini-2.0-flash], pick: judge, judge: gpt-4o}")
	sims(t, s, nil)
	a := askHybrid(t, s, "judge us [[pick 2]]", false)
	if a.status != http.StatusOK || a.header.Get("x-switchyard-hybrid") != "picked=claude-3-5-haiku; by=judge; answers=3/3" {
		t.Fatalf("%d, %q: %s", a.status, a.header.Get("x-switchyard-hybrid"), a.body)
	}
	rec := awaitRecord(t, s, a.header.Get("x-request-id"))
	wantReasons := []string{"openai/gpt-4o-mini: hybrid: not picked", "gemini/gemini-2.0-flash: hybrid: not picked", "openai/gpt-4o: hybrid: judge"}
	if rec.ServedModel != "claude-3-5-haiku" || rec.Attempts != 4 || !slices.Equal(rec.FallbackReasons, wantReasons) {
		t.Errorf("ledger %s, want reasons %q", describeRecord(rec), wantReasons)
	}
	st, _ := s.Sim.Stats("openai")
	if st.Requests != 2 {
		t.Errorf("openai got %d requests, want the leg and the judge's", st.Requests)
	}

	if a := askHybrid(t, s, "stream it", true); a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"param":"stream"`) {
		t.Errorf("a hybrid stream: %d %s", a.status, a.body)
	}
}
