package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/switchyard/switchyard/providersim"
)

// anthropicEnvelope returns the error type of an Anthropic error body, or
// why the body is not one.
func anthropicEnvelope(body string) (string, error) {
	var env struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Type != "error" || env.Error.Type == "" || env.Error.Message == "" {
		return "", errors.New("not Anthropic's error envelope: " + body)
	}
	return env.Error.Type, nil
}

// TestMessagesLocalRepliesInAnthropicEnvelope: what Envoy answers itself
// on the Messages routes — its token bucket's 429, which ext_proc never
// sees, and the 503 when no provider answers — reaches an Anthropic
// client in Anthropic's error envelope, while a chat client keeps
// OpenAI's.
func TestMessagesLocalRepliesInAnthropicEnvelope(t *testing.T) {
	t.Parallel()
	s := startStack(t, withLocalRateLimit(t, "{requests_per_second: 10000, burst: 10000, per_client: {requests_per_second: 1, burst: 3}}"))
	c := anthropicClient(s, demoKey)
	ask := func(model string) error {
		_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{
			Model: anthropic.Model(model), MaxTokens: 20,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
		})
		return err
	}

	t.Run("token bucket", func(t *testing.T) {
		limited := 0
		for range 8 {
			err := ask("claude-3-5-haiku")
			var apiErr *anthropic.Error
			if err == nil || !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
				continue
			}
			limited++
			if typ, err := anthropicEnvelope(apiErr.RawJSON()); err != nil || typ != "rate_limit_error" {
				t.Errorf("429 on /v1/messages: type %q, %v", typ, err)
			}
		}
		if limited == 0 {
			t.Fatal("8 requests in a row never met the client's bucket of 3")
		}
		chatLimited := 0
		for range 8 {
			code, _, body := post(t, s, teamKey, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
			if code != http.StatusTooManyRequests {
				continue
			}
			chatLimited++
			var env struct {
				Type  string `json:"type"`
				Error struct{ Type, Code string }
			}
			if json.Unmarshal(body, &env) != nil || env.Type != "" || env.Error.Type != "rate_limit_error" || env.Error.Code != "rate_limit_exceeded" {
				t.Errorf("429 on /v1/chat/completions is not OpenAI's envelope: %s", body)
			}
		}
		if chatLimited == 0 {
			t.Error("8 chat requests in a row never met the client's bucket of 3")
		}
	})

	t.Run("no provider answers", func(t *testing.T) {
		time.Sleep(3 * time.Second) // the client's bucket fills again
		for _, p := range []string{"anthropic", "openai", "gemini"} {
			if err := s.Sim.SetFault(p, providersim.Fault{Mode: providersim.FaultDown}); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Sim.ClearFault(p) }()
		}
		// gpt-4o-mini first, while openai still counts as healthy: its
		// first attempt is translated for OpenAI's path, and Envoy's reply
		// must still speak Anthropic (it once followed the rewritten path).
		for _, model := range []string{"gpt-4o-mini", "claude-3-5-haiku"} {
			err := ask(model)
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("%s with every provider down: %v, want a 503", model, err)
			}
			if typ, err := anthropicEnvelope(apiErr.RawJSON()); err != nil || typ != "overloaded_error" {
				t.Errorf("%s: 503 type %q, %v", model, typ, err)
			}
			if strings.Contains(apiErr.RawJSON(), `"code"`) {
				t.Errorf("%s: the body mixes in OpenAI's envelope: %s", model, apiErr.RawJSON())
			}
		}
	})
}
