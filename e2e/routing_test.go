package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

const adminKey = "sk-local-admin"

// fastHealth is configs/local's gateway.yaml with health timings short
// enough to watch a breaker open, half-open, close and a canary ramp within
// a test: the same state machine, seconds instead of minutes. The window's
// error rate needs more samples than the test sends, so the breaker, not
// the window, is what takes the provider out.
func fastHealth(t *testing.T) stack.Options {
	return withHealth(t, `
    min_samples: 100000
    breaker:
      consecutive_failures: 3
      open_timeout: 1s
      half_open_probes: 2
      probe_timeout: 2s
    recovery:
      steps: [0.10, 0.50, 1.00]
      stable_period: 5s
      max_canary: 60s
`)
}

// withHealth is configs/local with a gateway.health section (YAML indented
// under it) appended to gateway.yaml.
func withHealth(t *testing.T, health string) stack.Options {
	t.Helper()
	gw := localGateway(t)
	return stack.Options{Overlay: map[string]string{"gateway.yaml": gw + "  health:" + health}}
}

func admin(t *testing.T, s *stack.Stack, method, path, body string) (int, []byte) {
	t.Helper()
	resp, b := withKey(t, s, method, path, adminKey, body)
	return resp.StatusCode, b
}

// withKey sends a JSON body to path with key and reads the answer.
func withKey(t *testing.T, s *stack.Stack, method, path, key, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// served sends a chat request and returns the model that served it.
func served(t *testing.T, s *stack.Stack, model, user string) (string, error) {
	t.Helper()
	c := client(s, demoKey)
	var resp *http.Response
	params := openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
	if user != "" {
		params.User = openai.String(user)
	}
	_, err := c.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&resp))
	if err != nil {
		return "", err
	}
	return resp.Header.Get("x-switchyard-model"), nil
}

func requests(t *testing.T, s *stack.Stack, provider string) int {
	t.Helper()
	st, err := s.Sim.Stats(provider)
	if err != nil {
		t.Fatal(err)
	}
	return st.Requests
}

// TestFaultDrills: the admin API marks providers down without touching
// them; routing goes around them at once, and "all" leaves nothing.
func TestFaultDrills(t *testing.T) {
	s := startStack(t, fastHealth(t))
	if code, _ := func() (int, []byte) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/admin/fault/down", strings.NewReader(`{"provider":"openai"}`))
		req.Header.Set("Authorization", "Bearer "+demoKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}(); code != http.StatusUnauthorized {
		t.Errorf("a tenant key on the admin API got %d, want 401", code)
	}
	if code, b := admin(t, s, http.MethodPost, "/admin/fault/down", `{"provider":"openai"}`); code != http.StatusOK {
		t.Fatalf("drill: %d %s", code, b)
	}
	before := requests(t, s, "openai")
	for range 10 {
		m, err := served(t, s, "gpt-4o-mini", "")
		if err != nil || m != "claude-3-5-haiku" {
			t.Fatalf("during the drill gpt-4o-mini was served by %q (%v), want the fallback", m, err)
		}
	}
	if n := requests(t, s, "openai") - before; n != 0 {
		t.Errorf("the drilled provider received %d requests", n)
	}
	code, b := admin(t, s, http.MethodGet, "/admin/providers", "")
	if code != http.StatusOK || !strings.Contains(string(b), `"drill":true`) {
		t.Errorf("providers: %d %s", code, b)
	}
	if code, b := admin(t, s, http.MethodPost, "/admin/fault/down", `{"provider":"all"}`); code != http.StatusOK {
		t.Fatalf("drill all: %d %s", code, b)
	}
	if _, err := served(t, s, "gpt-4o-mini", ""); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("with every provider drilled: %v, want 503", err)
	}
	admin(t, s, http.MethodPost, "/admin/fault/up", `{"provider":"all"}`)
	admin(t, s, http.MethodPost, "/admin/fault/up", `{"provider":"openai"}`)
	if code, _ := admin(t, s, http.MethodPost, "/admin/fault/down", `{"provider":"nope"}`); code != http.StatusNotFound {
		t.Errorf("unknown provider drill: %d, want 404", code)
	}
}

type providerStatus struct {
	Provider string `json:"provider"`
	Breaker  struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
	} `json:"breaker"`
	Canary *struct {
		Share float64 `json:"share"`
	} `json:"canary"`
	LastSuccess time.Time `json:"last_success"`
	LastCheck   *struct {
		At    time.Time `json:"at"`
		OK    bool      `json:"ok"`
		Error string    `json:"error"`
	} `json:"last_check"`
}

func providerState(t *testing.T, s *stack.Stack, name string) providerStatus {
	t.Helper()
	code, b := admin(t, s, http.MethodGet, "/admin/providers", "")
	if code != http.StatusOK {
		t.Fatalf("providers: %d %s", code, b)
	}
	var list struct {
		Data []providerStatus `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Data {
		if p.Provider == name {
			return p
		}
	}
	t.Fatalf("provider %s not in %s", name, b)
	return providerStatus{}
}

// TestFailAndRecover is the acceptance run: mixed traffic while
// openai fails and comes back. No client request fails (another provider
// serves it), the breaker opens and skips openai, closes after half-open
// probes, and openai's share ramps 10% → 50% → 100%.
func TestFailAndRecover(t *testing.T) {
	s := startStack(t, fastHealth(t))
	failures := 0
	send := func(n int) map[string]int {
		byModel := map[string]int{}
		for i := range n {
			m, err := served(t, s, "gpt-4o-mini", fmt.Sprintf("u%d", i))
			if err != nil {
				failures++
				t.Logf("request failed: %v", err)
				continue
			}
			byModel[m]++
		}
		return byModel
	}
	send(20)
	if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultStatus, Status: 500}); err != nil {
		t.Fatal(err)
	}
	got := send(20)
	if got["gpt-4o-mini"] != 0 {
		t.Errorf("while openai fails: %v", got)
	}
	if st := providerState(t, s, "openai"); st.Breaker.State != "open" {
		t.Errorf("breaker = %q after repeated failures, want open", st.Breaker.State)
	}
	before := requests(t, s, "openai")
	send(10)
	if n := requests(t, s, "openai") - before; n != 0 {
		t.Errorf("an open breaker still let %d requests through", n)
	}

	_ = s.Sim.ClearFault("openai")
	time.Sleep(1200 * time.Millisecond) // open timeout → half-open
	send(10)                            // the probes succeed and close the breaker
	if st := providerState(t, s, "openai"); st.Breaker.State != "closed" || st.Canary == nil {
		t.Fatalf("after good probes: breaker %q, canary %+v; want closed and ramping", st.Breaker.State, st.Canary)
	}
	// Each canary step lasts stable_period; on a loaded machine a batch of
	// requests may straddle two steps, so the share is counted per step,
	// from batches that began and ended in the same step (as the admin API
	// reports it; no canary means all traffic).
	step := func() float64 {
		if c := providerState(t, s, "openai").Canary; c != nil {
			return c.Share
		}
		return 1
	}
	type count struct{ openai, all int }
	seen := map[float64]count{}
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); {
		before := step()
		got := send(25)
		if step() != before {
			continue
		}
		c := seen[before]
		for m, n := range got {
			c.all += n
			if m == "gpt-4o-mini" {
				c.openai += n
			}
		}
		seen[before] = c
		if before == 1 && c.all >= 100 {
			break
		}
	}
	t.Logf("openai share by canary step (openai/all): %v", seen)
	for _, want := range []struct {
		step     float64
		min, max float64
	}{{0.10, 0.02, 0.22}, {0.50, 0.30, 0.70}, {1, 0.97, 1}} {
		c := seen[want.step]
		if c.all < 50 {
			t.Errorf("canary step %.2f: only %d requests fell within it", want.step, c.all)
			continue
		}
		if share := float64(c.openai) / float64(c.all); share < want.min || share > want.max {
			t.Errorf("canary step %.2f: openai served %.2f of the requests, want %.2f–%.2f", want.step, share, want.min, want.max)
		}
	}
	if failures > 0 {
		t.Errorf("%d client requests failed although another provider could serve them", failures)
	}
}

// TestStickiness: a user stays on the model that served them; another
// user gets what the strategy picks.
func TestStickiness(t *testing.T) {
	s := fallbacks(t)
	c := client(s, demoKey)
	ask := func(user, text string) string {
		var resp *http.Response
		_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "auto",
			User:     openai.String(user),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		}, option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Get("x-switchyard-model")
	}
	hard := "Prove step by step that the sum of the first n odd numbers is n squared, then derive a closed form for the sum of cubes, explain why each step holds and compare the two proofs in detail."
	strong := ask("alice", hard)
	cheap := ask("bob", "hi")
	if strong == cheap {
		t.Fatalf("the strategy picked %s for both a hard and a trivial prompt", strong)
	}
	if got := ask("alice", "hi"); got != strong {
		t.Errorf("alice moved from %s to %s within the cooldown", strong, got)
	}
	if got := ask("bob", hard); got != cheap {
		t.Errorf("bob moved from %s to %s within the cooldown", cheap, got)
	}
}
