package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

var (
	fallbackOnce  sync.Once
	fallbackStack *stack.Stack
	fallbackErr   error
)

// fallbackStack serves configs/local for the tests that fail providers;
// they run one at a time since a fault hits every request to a provider.
// Its health monitor never takes a provider out (no breaker, no window
// verdicts), so each test sees Envoy's fallback alone whatever the tests
// before it failed; breakers have their own tests (routing_test.go).
func fallbacks(t *testing.T) *stack.Stack {
	t.Helper()
	fallbackOnce.Do(func() {
		fallbackStack, fallbackErr = stack.Start(context.Background(), withHealth(t, `
    min_samples: 1000000
    breaker: {consecutive_failures: 0, failure_ratio: 0}
`))
		if fallbackErr == nil {
			cleanups = append(cleanups, fallbackStack.Close)
			sharedStacks = append(sharedStacks, fallbackStack)
		}
	})
	if fallbackErr != nil {
		t.Fatalf("starting the gateway: %v", fallbackErr)
	}
	return fallbackStack
}

// TestFallbackAcrossProviders fails the primary provider in each way the
// issue names and expects the next model of the chain, of another provider
// kind, to answer in OpenAI form — whole and streamed.
func TestFallbackAcrossProviders(t *testing.T) {
	s := fallbacks(t)
	tests := []struct {
		name       string
		model      string
		failing    string
		fault      providersim.Fault
		wantModel  string
		wantVendor string
	}{
		{"openai refuses connections", "gpt-4o-mini", "openai", providersim.Fault{Mode: providersim.FaultDown}, "claude-3-5-haiku", "anthropic"},
		{"openai answers 503", "gpt-4o-mini", "openai", providersim.Fault{Mode: providersim.FaultDown503}, "claude-3-5-haiku", "anthropic"},
		{"openai rate limits", "gpt-4o", "openai", providersim.Fault{Mode: providersim.FaultStatus, Status: 429}, "claude-3-5-sonnet", "anthropic"},
		{"anthropic overloaded (529)", "claude-3-5-sonnet", "anthropic", providersim.Fault{Mode: providersim.FaultStatus, Status: 529}, "gpt-4o", "openai"},
		{"anthropic 500", "claude-3-5-haiku", "anthropic", providersim.Fault{Mode: providersim.FaultStatus, Status: 500}, "gpt-4o-mini", "openai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Sim.SetFault(tt.failing, tt.fault); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Sim.ClearFault(tt.failing) }()
			c := client(s, demoKey)
			var resp *http.Response
			got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    tt.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("fall back please")},
			}, option.WithResponseInto(&resp))
			if err != nil {
				t.Fatalf("the client saw the failure: %v", err)
			}
			if h := resp.Header.Get("x-switchyard-model"); h != tt.wantModel || resp.Header.Get("x-switchyard-provider") != tt.wantVendor {
				t.Errorf("served by %s/%s, want %s/%s", resp.Header.Get("x-switchyard-provider"), h, tt.wantVendor, tt.wantModel)
			}
			if resp.Header.Get("x-switchyard-fallback-count") != "1" || resp.Header.Get("x-switchyard-route-reason") == "" {
				t.Errorf("x-switchyard-fallback-count %q, x-switchyard-route-reason %q", resp.Header.Get("x-switchyard-fallback-count"), resp.Header.Get("x-switchyard-route-reason"))
			}
			if got.Model != tt.model || !strings.Contains(got.Choices[0].Message.Content, "fall back please") || got.Usage.TotalTokens == 0 {
				t.Errorf("answer not in OpenAI form for the requested model: %s", got.RawJSON())
			}
			noNativeFields(t, got.RawJSON())

			stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model:         tt.model,
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream it anyway")},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			}, option.WithResponseInto(&resp))
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("streamed fallback: %v", err)
			}
			if resp.Header.Get("x-switchyard-model") != tt.wantModel || !strings.Contains(acc.Choices[0].Message.Content, "stream it anyway") || acc.Usage.TotalTokens == 0 {
				t.Errorf("streamed: served by %s, content %q, usage %+v", resp.Header.Get("x-switchyard-model"), acc.Choices[0].Message.Content, acc.Usage)
			}
		})
	}
}

// TestAllProvidersDown: when every attempt fails the client gets one 503
// listing each attempt and why it failed.
func TestAllProvidersDown(t *testing.T) {
	s := fallbacks(t)
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		if err := s.Sim.SetFault(p, providersim.Fault{Mode: providersim.FaultStatus, Status: 503}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Sim.ClearFault(p) }()
	}
	c := client(s, demoKey)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("anyone?")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want 503", err)
	}
	for _, want := range []string{"attempt 1 openai/gpt-4o-mini: 503", "attempt 2 anthropic/claude-3-5-haiku: 503", "attempt 3 gemini/gemini-2.0-flash: 503"} {
		if !strings.Contains(apiErr.Message, want) {
			t.Errorf("message %q lacks %q", apiErr.Message, want)
		}
	}
}

// TestFirstByteTimeoutFailsOver: a provider that accepts the request but
// sends nothing within the route's per-try idle timeout is failed over to
// the next model, for a whole and a streamed answer.
func TestFirstByteTimeoutFailsOver(t *testing.T) {
	root, _ := stack.ModuleRoot()
	routes, err := os.ReadFile(filepath.Join(root, "configs", "local", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	short := strings.Replace(string(routes), "    api: chat_completions\n", "    api: chat_completions\n    per_try_idle_timeout: 1s\n", 1)
	if short == string(routes) {
		t.Fatal("routes.yaml has no chat route to shorten")
	}
	s := startStack(t, stack.Options{Overlay: map[string]string{"routes.yaml": short}})
	if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		var resp *http.Response
		c := client(s, demoKey)
		params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("are you there")}}
		if stream {
			st := c.Chat.Completions.NewStreaming(context.Background(), params, option.WithResponseInto(&resp))
			for st.Next() {
			}
			err = st.Err()
		} else {
			_, err = c.Chat.Completions.New(context.Background(), params, option.WithResponseInto(&resp))
		}
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if got := resp.Header.Get("x-switchyard-model"); got != "claude-3-5-haiku" {
			t.Errorf("stream=%v: served by %q; want the fallback after the 1s per-try timeout", stream, got)
		}
	}
}

// TestProvidersGetOnlyTheGatewaysRequest sends a request full of client
// headers a provider must never see (the end user's address, cookies,
// the client's organization, router and internal headers) and checks what
// the provider got: on the first attempt, which ext_proc translates in its
// reply to the request body and Envoy sends without the per-attempt
// filter, and on a retry to another provider, which the per-attempt filter
// translates afresh from the client's request.
func TestProvidersGetOnlyTheGatewaysRequest(t *testing.T) {
	s := fallbacks(t)
	withheld := map[string]string{
		"X-Forwarded-For": "203.0.113.7", "User-Agent": "probe/1", "Cookie": "session=s3cret",
		"Openai-Organization": "org-client", "Anthropic-Beta": "client-beta", "X-User-Id": "u-42",
		"X-Switchyard-Route": "admin", "X-Envoy-Retry-On": "5xx", "X-Envoy-Upstream-Rq-Per-Try-Timeout-Ms": "1",
	}
	for _, tc := range []struct {
		name, model, fault, provider string
	}{
		{name: "first attempt", model: "gpt-4o-mini", provider: "openai"},
		{name: "retried on another provider", model: "gpt-4o", fault: "openai", provider: "anthropic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != "" {
				if err := s.Sim.SetFault(tc.fault, providersim.Fault{Mode: providersim.FaultDown503}); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = s.Sim.ClearFault(tc.fault) }()
			}
			marker := "headers probe " + strings.ReplaceAll(tc.name, " ", "-")
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions",
				strings.NewReader(`{"model":"`+tc.model+`","messages":[{"role":"user","content":"`+marker+`"}]}`))
			req.Header.Set("Authorization", "Bearer "+demoKey)
			req.Header.Set("Content-Type", "application/json")
			for k, v := range withheld {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("x-switchyard-provider") != tc.provider {
				t.Fatalf("status %d from %q, want 200 from %s", resp.StatusCode, resp.Header.Get("x-switchyard-provider"), tc.provider)
			}
			st, err := s.Sim.Stats(tc.provider)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range st.Recent {
				if !strings.Contains(r.Body, marker) {
					continue
				}
				for k := range withheld {
					if v := r.Header.Get(k); v != "" {
						t.Errorf("%s got %s: %q", tc.provider, k, v)
					}
				}
				for k := range r.Header {
					if strings.HasPrefix(strings.ToLower(k), "x-envoy-") || strings.HasPrefix(strings.ToLower(k), "x-switchyard-") || strings.EqualFold(k, "X-Forwarded-Proto") {
						t.Errorf("%s got the gateway's own %s", tc.provider, k)
					}
				}
				// The simulated providers of configs/local have no key.
				for _, k := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key"} {
					if v := r.Header.Get(k); v != "" {
						t.Errorf("%s got %s %q, from a policy that gives it no key", tc.provider, k, v)
					}
				}
				return
			}
			t.Fatalf("%s recorded no request with %q", tc.provider, marker)
		})
	}
}
