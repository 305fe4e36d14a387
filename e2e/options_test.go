package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard/switchyard/stack"
)

// The options stack is the shipped policy with the route and tenant
// options that change what reaches a provider or what a request is
// accounted under turned on, shared by the tests of those options:
// fit_output_to_context and tags_from_metadata on the chat and Messages
// routes (the Responses route keeps their defaults, to compare), redact
// on the Responses route, models whose small context windows a test
// prompt can fill, a tenant with a tagged key and a budget per tag, a
// tenant whose requests are redacted and restored on every route, and
// usage events on a stream.
var (
	optionsOnce  sync.Once
	optionsStack *stack.Stack
)

// taggedKey is the key of tenant tagged, whose requests carry team=search
// unless they say otherwise; the requests tagged feature=tight have a
// budget of 100 micro-USD a day.
const taggedKey = "sk-e2e-tagged"

// privateKey is the key of tenant private, whose requests' sensitive
// data is masked before it reaches a provider and restored in the
// answers, on every route.
const privateKey = "sk-e2e-private"

// optionsStream is the options stack's usage events stream.
const optionsStream = "options"

// optionsPolicy adds tenant tagged, and models with small context windows
// on the simulators.
var optionsPolicy = fmt.Sprintf(`
tenants:
  - name: tagged
    budget_usd: {daily: 100}
    tag_budgets:
      - {tag: feature=tight, budget_usd: {daily: 0.0001}}
    keys:
      - {name: tagged-key, sha256: %s, tags: {team: search}}
  - name: private
    budget_usd: {daily: 100}
    redact: {restore: true}
    keys:
      - {name: private-key, sha256: %s}
models:
  - {name: tiny-gpt, provider: openai, upstream: gpt-4o-mini, context_window: 3000, max_output_tokens: 2000, capabilities: [chat, stream], price_usd_per_mtok: {input: 0.15, output: 0.60}}
  - {name: tiny-claude, provider: anthropic, upstream: claude-3-5-haiku-20241022, context_window: 3000, max_output_tokens: 2000, capabilities: [chat, stream], price_usd_per_mtok: {input: 0.25, output: 1.25}}
`, sha256Hex(taggedKey), sha256Hex(privateKey))

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// options starts the options stack once; a test that calls it after a
// failed start fails too.
func options(t *testing.T) *stack.Stack {
	t.Helper()
	optionsOnce.Do(func() {
		routes := localFile(t, "routes.yaml")
		for _, name := range []string{"chat", "messages"} {
			route := "  - name: " + name + "\n"
			if !strings.Contains(routes, route) {
				t.Fatalf("configs/local/routes.yaml has no route %s", name)
			}
			routes = strings.Replace(routes, route, route+"    fit_output_to_context: true\n    tags_from_metadata: true\n", 1)
		}
		const responses = "  - name: responses\n"
		if !strings.Contains(routes, responses) {
			t.Fatal("configs/local/routes.yaml has no route responses")
		}
		routes = strings.Replace(routes, responses, responses+"    redact: {}\n", 1)
		gateway := localFile(t, "gateway.yaml") + "  events: {stream: " + optionsStream + "}\n"
		s, err := stack.Start(context.Background(), stack.Options{Overlay: map[string]string{
			"routes.yaml": routes, "gateway.yaml": gateway, "options.yaml": optionsPolicy,
		}})
		if err != nil {
			t.Fatalf("starting the gateway: %v", err)
		}
		cleanups = append(cleanups, s.Close)
		sharedStacks = append(sharedStacks, s)
		optionsStack = s
	})
	if optionsStack == nil {
		t.Fatal("the options stack failed to start (see the first test that ran it)")
	}
	return optionsStack
}

// localFile is a file of configs/local.
func localFile(t *testing.T, name string) string {
	t.Helper()
	root, err := stack.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "configs", "local", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// postTo sends body to path with key and headers (name, value pairs) and
// returns the answer, read whole.
func postTo(t *testing.T, s *stack.Stack, path, key, body string, header ...string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if strings.HasPrefix(path, "/v1/messages") {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := fresh.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var a answer
	a.status, a.header = resp.StatusCode, resp.Header
	a.body, _ = io.ReadAll(resp.Body)
	return a
}

// lastBody is the body of the last request a simulated provider received,
// decoded.
func lastBody(t *testing.T, s *stack.Stack, provider string) map[string]any {
	t.Helper()
	st, err := s.Sim.Stats(provider)
	if err != nil || len(st.Recent) == 0 {
		t.Fatalf("%s's requests: %d, %v", provider, len(st.Recent), err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(st.Recent[len(st.Recent)-1].Body), &body); err != nil {
		t.Fatalf("%s's last request: %v", provider, err)
	}
	return body
}
