package e2e

import (
	"bufio"
	"bytes"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// Keys of the two Azure deployments of gpt-4o. Each simulator insists on
// its own, and neither may reach another provider or any log (they match
// secretPatterns).
const (
	eastKey = "az-e2e-key-east"
	westKey = "az-e2e-key-west"
)

// regions adds two Azure regions as deployments of configs/local's gpt-4o,
// each with its own key, upstream name and price.
const regions = `
providers:
  - {name: azure-east, kind: azure_openai, base_url: "http://127.0.0.1:1", api_version: "2024-10-21", api_key: {env: AZURE_EAST_KEY}}
  - {name: azure-west, kind: azure_openai, base_url: "http://127.0.0.1:1", api_version: "2024-10-21", api_key: {env: AZURE_WEST_KEY}}
models:
  - {name: gpt-4o, provider: azure-east, upstream: gpt4o-east, weight: 3, price_usd_per_mtok: {input: 2.75, output: 11.00}}
  - {name: gpt-4o, provider: azure-west, upstream: gpt4o-west, weight: 1, price_usd_per_mtok: {input: 3.00, output: 12.00}}
`

// deploymentPrices are what each deployment of gpt-4o charges, as the
// policy says.
var deploymentPrices = map[string]policy.Price{
	"openai":     {InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000, CachedInputPerMTok: 1_250_000},
	"azure-east": {InputPerMTok: 2_750_000, OutputPerMTok: 11_000_000, CachedInputPerMTok: 2_750_000},
	"azure-west": {InputPerMTok: 3_000_000, OutputPerMTok: 12_000_000, CachedInputPerMTok: 3_000_000},
}

// deploymentShares are the weights 6:3:1 of gpt-4o's deployments as
// shares of the requests each serves first.
var deploymentShares = map[string]float64{"openai": 0.6, "azure-east": 0.3, "azure-west": 0.1}

// deploymentOptions is configs/local with gpt-4o on openai (weight 6) and
// on the two regions, the chat route allowed four attempts (the three
// deployments, then the next model), and health per the given YAML.
func deploymentOptions(t *testing.T, health string) stack.Options {
	t.Helper()
	root, _ := stack.ModuleRoot()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, "configs", "local", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	edit := func(file, old, new string) string {
		s := read(file)
		if !strings.Contains(s, old) {
			t.Fatalf("configs/local/%s no longer has %q", file, old)
		}
		return strings.Replace(s, old, new, 1)
	}
	o := withHealth(t, health)
	o.Overlay["regions.yaml"] = regions
	o.Overlay["models.yaml"] = edit("models.yaml", "  - name: gpt-4o\n    provider: openai\n", "  - name: gpt-4o\n    provider: openai\n    weight: 6\n")
	o.Overlay["routes.yaml"] = edit("routes.yaml", "    api: chat_completions\n", "    api: chat_completions\n    attempts: 4\n")
	o.ExtraProviders = []providersim.ProviderConfig{
		{Name: "azure-east", Kind: providersim.KindAzureOpenAI, ExpectKey: eastKey},
		{Name: "azure-west", Kind: providersim.KindAzureOpenAI, ExpectKey: westKey},
	}
	o.Env = []string{"AZURE_EAST_KEY=" + eastKey, "AZURE_WEST_KEY=" + westKey}
	return o
}

func gpt4o(t *testing.T, s *stack.Stack, stream bool) answer {
	t.Helper()
	body := `{"model":"gpt-4o","max_tokens":30,"messages":[{"role":"user","content":"which region answers?"}]}`
	if stream {
		body = `{"model":"gpt-4o","max_tokens":30,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"which region answers?"}]}`
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+demoKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := fresh.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: buf.Bytes()}
}

// servedBy is "provider/model" of an answer, and its fallback count.
func servedBy(a answer) (string, string) {
	return a.header.Get("x-switchyard-provider") + "/" + a.header.Get("x-switchyard-model"), a.header.Get("x-switchyard-fallback-count")
}

// TestDeployments: gpt-4o on openai and two Azure regions. Weights split
// its traffic; each deployment's key reaches only its own upstream, under
// its own upstream name; every ledger row names the deployment that served
// and is priced at its price; a failing deployment falls back to a sibling
// before the next model, whole and streamed.
func TestDeployments(t *testing.T) {
	// No breaker and no window verdicts: every failure below is Envoy's
	// fallback alone (TestDeploymentBreaker has the breaker).
	s := startStack(t, deploymentOptions(t, `
    min_samples: 1000000
    breaker: {consecutive_failures: 0, failure_ratio: 0}
`))

	t.Run("weights split traffic", func(t *testing.T) {
		const n = 200
		answers := burst(n, 8, func() answer { return gpt4o(t, s, false) })
		count := map[string]int{}
		for _, a := range answers {
			by, fallbacks := servedBy(a)
			if a.status != http.StatusOK || fallbacks != "0" || !strings.HasSuffix(by, "/gpt-4o") {
				t.Fatalf("%d served by %s after %s fallbacks: %s", a.status, by, fallbacks, a.body)
			}
			count[a.header.Get("x-switchyard-provider")]++
		}
		for p, want := range deploymentShares {
			// Five standard deviations of a binomial share: a right split
			// fails this about once in two million runs; an even one, or
			// one ignoring the weights, always does.
			share, sd := float64(count[p])/n, math.Sqrt(want*(1-want)/n)
			if math.Abs(share-want) > 5*sd {
				t.Errorf("%s served %.3f of the requests, want %.2f ± %.3f (counts %v)", p, share, want, 5*sd, count)
			}
			if got := requests(t, s, p); got != count[p] {
				t.Errorf("%s's simulator saw %d requests, the answers name it %d times", p, got, count[p])
			}
		}
	})

	t.Run("each deployment's key reaches only its own upstream", func(t *testing.T) {
		for p, want := range map[string]struct{ key, path string }{
			"azure-east": {eastKey, "/openai/deployments/gpt4o-east/chat/completions"},
			"azure-west": {westKey, "/openai/deployments/gpt4o-west/chat/completions"},
			"openai":     {"", "/v1/chat/completions"},
		} {
			st, err := s.Sim.Stats(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Recent) == 0 {
				t.Fatalf("%s saw no request", p)
			}
			for _, r := range st.Recent {
				if want.key != "" && r.Header.Get("Api-Key") != want.key {
					t.Errorf("%s got api-key %q, want its own", p, r.Header.Get("Api-Key"))
				}
				for name, vs := range r.Header {
					for _, v := range vs {
						for _, k := range []string{eastKey, westKey} {
							if k != want.key && strings.Contains(v, k) {
								t.Errorf("%s got another deployment's key in %s", p, name)
							}
						}
					}
				}
				if r.Path != want.path {
					t.Errorf("%s was asked %s, want %s", p, r.Path, want.path)
				}
			}
		}
	})

	t.Run("ledger rows name and price the deployment", func(t *testing.T) {
		a := burst(30, 4, func() answer { return gpt4o(t, s, false) })
		rows := ledgerRecords(t, s)
		priced := map[string]bool{}
		for _, ans := range a {
			id := ans.header.Get("X-Request-Id")
			r, ok := rows[id]
			if !ok {
				t.Fatalf("no ledger row for %s", id)
			}
			p := ans.header.Get("x-switchyard-provider")
			want := deploymentPrices[p].Micros(rowTokens(r))
			if r.Provider != p || r.ServedModel != "gpt-4o" || r.CostMicros != want || want == 0 {
				t.Errorf("row %s: %s/%s at %d micro-USD; want %s/gpt-4o at %d (%d in, %d out)", id, r.Provider, r.ServedModel, r.CostMicros, p, want, r.InputTokens, r.OutputTokens)
			}
			priced[p] = true
		}
		if len(priced) < 2 {
			t.Errorf("30 requests were served by %v only", priced)
		}
	})

	t.Run("a failing deployment falls back to a sibling before the next model", func(t *testing.T) {
		tests := []struct {
			name    string
			failing []string
			stream  bool
			// fallbacks is the count that shows the plan started with a
			// failing deployment; want are who may serve then.
			fallbacks string
			want      []string
		}{
			{"openai answers 503", []string{"openai"}, false, "1", []string{"azure-east/gpt-4o", "azure-west/gpt-4o"}},
			{"openai refuses connections, streamed", []string{"openai"}, true, "1", []string{"azure-east/gpt-4o", "azure-west/gpt-4o"}},
			{"two regions answer 503: the third deployment serves", []string{"openai", "azure-east"}, false, "2", []string{"azure-west/gpt-4o"}},
			{"every deployment fails: the next model serves", []string{"openai", "azure-east", "azure-west"}, false, "3", []string{"anthropic/claude-3-5-sonnet"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				for _, p := range tt.failing {
					f := providersim.Fault{Mode: providersim.FaultStatus, Status: 503}
					if tt.stream {
						f = providersim.Fault{Mode: providersim.FaultDown}
					}
					if err := s.Sim.SetFault(p, f); err != nil {
						t.Fatal(err)
					}
					defer func() { _ = s.Sim.ClearFault(p) }()
				}
				// A request whose plan starts with a healthy deployment is
				// served at once; keep asking until one started with every
				// failing one.
				for i := 0; ; i++ {
					if i == 60 {
						t.Fatalf("no plan started with %v in 60 requests", tt.failing)
					}
					a := gpt4o(t, s, tt.stream)
					by, fallbacks := servedBy(a)
					if a.status != http.StatusOK {
						t.Fatalf("%d after %s fallbacks: %s", a.status, fallbacks, a.body)
					}
					if tt.stream && !streamComplete(a) {
						t.Fatalf("streamed fallback by %s is not a whole stream: %s", by, a.body)
					}
					if fallbacks != tt.fallbacks {
						continue
					}
					ok := false
					for _, w := range tt.want {
						ok = ok || by == w
					}
					if !ok {
						t.Errorf("served by %s after %s fallbacks, want one of %v", by, fallbacks, tt.want)
					}
					break
				}
			})
		}
	})
}

// streamComplete reports whether an SSE answer has content and ends with
// [DONE].
func streamComplete(a answer) bool {
	chunks, done := 0, false
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case line == "[DONE]":
			done = true
		case strings.Contains(line, `"chat.completion.chunk"`):
			chunks++
		}
	}
	return chunks > 0 && done
}

// TestDeploymentBreaker: a deployment whose breaker opened is left out of
// its model's plans, and its siblings serve at once, without a fallback.
func TestDeploymentBreaker(t *testing.T) {
	s := startStack(t, deploymentOptions(t, `
    min_samples: 1000000
    breaker: {consecutive_failures: 2, open_timeout: 10m}
`))
	if err := s.Sim.SetFault("azure-east", providersim.Fault{Mode: providersim.FaultStatus, Status: 500}); err != nil {
		t.Fatal(err)
	}
	for i := 0; requests(t, s, "azure-east") < 2; i++ {
		if i == 100 {
			t.Fatalf("azure-east was tried %d times in 100 requests", requests(t, s, "azure-east"))
		}
		if a := gpt4o(t, s, false); a.status != http.StatusOK {
			t.Fatalf("while azure-east failed: %d %s", a.status, a.body)
		}
	}
	// The breaker opens on the second failure's observation, which may
	// trail the answer a little.
	for deadline := time.Now().Add(5 * time.Second); providerState(t, s, "azure-east").Breaker.State != "open"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("azure-east's breaker did not open: %+v", providerState(t, s, "azure-east"))
		}
	}
	tried := requests(t, s, "azure-east")
	skipped := 0
	for range 40 {
		a := gpt4o(t, s, false)
		by, fallbacks := servedBy(a)
		if a.status != http.StatusOK || fallbacks != "0" || by == "azure-east/gpt-4o" || !strings.HasSuffix(by, "/gpt-4o") {
			t.Fatalf("%d served by %s after %s fallbacks: %s", a.status, by, fallbacks, a.body)
		}
		if strings.Contains(a.header.Get("x-switchyard-route-reason"), "skipped azure-east/gpt-4o (breaker open") {
			skipped++
		}
	}
	if got := requests(t, s, "azure-east"); got != tried {
		t.Errorf("azure-east was tried %d times with its breaker open", got-tried)
	}
	if skipped == 0 {
		t.Error("no route reason names azure-east as skipped")
	}
}

// TestDeploymentsLeastInFlight: gpt-4o balanced by least in flight. While
// azure-east answers a second late, the requests under way pile up there
// and new ones go to its idle siblings, far below the 30% its weight would
// give it; once it is fast again, one request at a time finds every
// deployment idle and the weights break the ties, so the slow answers
// left nothing counted in flight.
func TestDeploymentsLeastInFlight(t *testing.T) {
	o := deploymentOptions(t, `
    min_samples: 1000000
    breaker: {consecutive_failures: 0, failure_ratio: 0}
`)
	if !strings.Contains(o.Overlay["models.yaml"], "    weight: 6\n") {
		t.Fatal("deploymentOptions no longer weighs openai's gpt-4o")
	}
	o.Overlay["models.yaml"] = strings.Replace(o.Overlay["models.yaml"], "    weight: 6\n", "    weight: 6\n    balance: least_in_flight\n", 1)
	s := startStack(t, o)

	count := func(answers []answer) map[string]int {
		c := map[string]int{}
		for _, a := range answers {
			by, fallbacks := servedBy(a)
			if a.status != http.StatusOK || fallbacks != "0" || !strings.HasSuffix(by, "/gpt-4o") {
				t.Fatalf("%d served by %s after %s fallbacks: %s", a.status, by, fallbacks, a.body)
			}
			c[a.header.Get("x-switchyard-provider")]++
		}
		return c
	}
	if err := s.Sim.SetFault("azure-east", providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(time.Second)}); err != nil {
		t.Fatal(err)
	}
	const n = 60
	slow := count(burst(n, 4, func() answer { return gpt4o(t, s, false) }))
	// By weight alone azure-east would serve 0.30 ± 0.06: a share below
	// 0.15 is 2.5 standard deviations under it.
	if share := float64(slow["azure-east"]) / n; share >= 0.15 {
		t.Errorf("azure-east, a second late, served %.2f of %d concurrent requests (counts %v); least in flight should keep it under 0.15", share, n, slow)
	}
	t.Logf("azure-east a second late, %d requests 4 at a time: %v", n, slow)
	if err := s.Sim.ClearFault("azure-east"); err != nil {
		t.Fatal(err)
	}

	const m = 100
	idle := count(burst(m, 1, func() answer { return gpt4o(t, s, false) }))
	for p, want := range deploymentShares {
		share, sd := float64(idle[p])/m, math.Sqrt(want*(1-want)/m)
		if math.Abs(share-want) > 5*sd {
			t.Errorf("one request at a time, %s served %.2f, want its weight's %.2f ± %.2f (counts %v)", p, share, want, 5*sd, idle)
		}
	}
	t.Logf("then %d requests one at a time: %v", m, idle)
}
