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
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// anthropicClient is the official Anthropic SDK pointed at the gateway,
// the virtual key sent as X-Api-Key as Claude Code sends it, SDK retries
// off.
func anthropicClient(s *stack.Stack, key string) anthropic.Client {
	return anthropic.NewClient(
		anthropicopt.WithBaseURL(s.URL),
		anthropicopt.WithAPIKey(key),
		anthropicopt.WithMaxRetries(0),
		anthropicopt.WithRequestTimeout(30*time.Second),
	)
}

// messageKinds are a model of each provider kind of configs/local.
var messageKinds = []struct{ model, provider string }{
	{"claude-3-5-haiku", "anthropic"},
	{"gpt-4o-mini", "openai"},
	{"gemini-2.0-flash", "gemini"},
}

// TestMessagesEveryProvider: an Anthropic SDK client gets Messages answers,
// whole and streamed, from a model of every provider kind.
func TestMessagesEveryProvider(t *testing.T) {
	t.Parallel()
	c := anthropicClient(shared, demoKey)
	for _, k := range messageKinds {
		t.Run(k.provider, func(t *testing.T) {
			t.Parallel()
			var resp *http.Response
			msg, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{
				Model: anthropic.Model(k.model), MaxTokens: 200,
				System:   []anthropic.TextBlockParam{{Text: "Be brief."}},
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello gateway"))},
			}, anthropicopt.WithResponseInto(&resp))
			if err != nil {
				t.Fatalf("messages: %v", err)
			}
			if got := resp.Header.Get("x-switchyard-provider"); got != k.provider {
				t.Errorf("served by %q, want %q", got, k.provider)
			}
			if msg.Type != "message" || msg.Role != "assistant" || msg.StopReason != anthropic.StopReasonEndTurn {
				t.Errorf("type %q role %q stop %q; want a finished assistant message", msg.Type, msg.Role, msg.StopReason)
			}
			if len(msg.Content) != 1 || !strings.Contains(msg.Content[0].Text, "hello gateway") {
				t.Errorf("content %+v; want the simulator's echo", msg.Content)
			}
			if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
				t.Errorf("usage %+v; want both counts", msg.Usage)
			}

			stream := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
				Model: anthropic.Model(k.model), MaxTokens: 200,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("stream to me"))},
			}, anthropicopt.WithResponseInto(&resp))
			var acc anthropic.Message
			var types []string
			for stream.Next() {
				ev := stream.Current()
				if len(types) == 0 || types[len(types)-1] != ev.Type {
					types = append(types, ev.Type)
				}
				if err := acc.Accumulate(ev); err != nil {
					t.Fatalf("accumulate %s: %v", ev.Type, err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			want := "message_start content_block_start content_block_delta content_block_stop message_delta message_stop"
			if got := strings.Join(types, " "); got != want {
				t.Errorf("event sequence %q, want %q (pings aside)", got, want)
			}
			if len(acc.Content) != 1 || !strings.Contains(acc.Content[0].Text, "stream to me") || acc.StopReason != anthropic.StopReasonEndTurn {
				t.Errorf("streamed message %+v", acc)
			}
			if acc.Usage.InputTokens == 0 || acc.Usage.OutputTokens == 0 {
				t.Errorf("streamed usage %+v; want both counts", acc.Usage)
			}
		})
	}
}

// TestMessagesToolRoundTrip: a tool call and its result, through every
// provider kind, in Anthropic's tool_use/tool_result form.
func TestMessagesToolRoundTrip(t *testing.T) {
	t.Parallel()
	c := anthropicClient(shared, demoKey)
	tools := []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
		Name: "get_weather", Description: anthropic.String("Weather of a city."),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}},
	}}}
	for _, k := range messageKinds {
		t.Run(k.provider, func(t *testing.T) {
			t.Parallel()
			ask := anthropic.NewUserMessage(anthropic.NewTextBlock("weather in Oslo?"))
			for _, streamed := range []bool{false, true} {
				params := anthropic.MessageNewParams{Model: anthropic.Model(k.model), MaxTokens: 200, Tools: tools, Messages: []anthropic.MessageParam{ask}}
				var call anthropic.Message
				if streamed {
					stream := c.Messages.NewStreaming(context.Background(), params)
					for stream.Next() {
						if err := call.Accumulate(stream.Current()); err != nil {
							t.Fatal(err)
						}
					}
					if err := stream.Err(); err != nil {
						t.Fatalf("streamed tool call: %v", err)
					}
				} else {
					m, err := c.Messages.New(context.Background(), params)
					if err != nil {
						t.Fatalf("tool call: %v", err)
					}
					call = *m
				}
				if call.StopReason != anthropic.StopReasonToolUse || len(call.Content) == 0 {
					t.Fatalf("streamed=%v: stop %q content %+v; want a tool_use", streamed, call.StopReason, call.Content)
				}
				use := call.Content[len(call.Content)-1]
				var input map[string]any
				if use.Type != "tool_use" || use.Name != "get_weather" || use.ID == "" || json.Unmarshal(use.Input, &input) != nil {
					t.Fatalf("streamed=%v: last block %+v; want a get_weather tool_use with a JSON input", streamed, use)
				}
				params.Messages = append(params.Messages, call.ToParam(),
					anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "sunny, 21C", false)))
				answer, err := c.Messages.New(context.Background(), params)
				if err != nil {
					t.Fatalf("streamed=%v: tool result: %v", streamed, err)
				}
				if answer.StopReason != anthropic.StopReasonEndTurn || len(answer.Content) == 0 || !strings.Contains(answer.Content[0].Text, "sunny, 21C") {
					t.Errorf("streamed=%v: answer to the tool result %+v", streamed, answer.Content)
				}
			}
		})
	}
}

// TestMessagesErrorsInAnthropicEnvelope: refusals on the Messages route
// reach an Anthropic client as Anthropic errors it can switch on.
func TestMessagesErrorsInAnthropicEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key, model string
		maxTokens        int64
		wantStatus       int
		wantType         string
	}{
		{"unknown key", "sk-local-nobody", "claude-3-5-haiku", 10, http.StatusUnauthorized, "authentication_error"},
		{"unknown model", demoKey, "claude-9", 10, http.StatusNotFound, "not_found_error"},
		{"max_tokens 0", demoKey, "claude-3-5-haiku", 0, http.StatusBadRequest, "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := anthropicClient(shared, tt.key)
			_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{
				Model: anthropic.Model(tt.model), MaxTokens: tt.maxTokens,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
			})
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.wantStatus {
				t.Fatalf("err = %v, want status %d", err, tt.wantStatus)
			}
			var env struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(apiErr.RawJSON()), &env); err != nil || env.Type != "error" || env.Error.Type != tt.wantType || env.Error.Message == "" {
				t.Errorf("body %s; want Anthropic's envelope with type %s", apiErr.RawJSON(), tt.wantType)
			}
		})
	}
}

// TestMessagesCountTokens: Anthropic and Gemini models count with their
// provider's own endpoint (count_tokens, countTokens); others get the
// gateway's estimate, marked as one.
func TestMessagesCountTokens(t *testing.T) {
	t.Parallel()
	c := anthropicClient(shared, demoKey)
	for _, k := range messageKinds {
		t.Run(k.provider, func(t *testing.T) {
			t.Parallel()
			var resp *http.Response
			n, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
				Model:    anthropic.Model(k.model),
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("how many tokens is this?"))},
			}, anthropicopt.WithResponseInto(&resp))
			if err != nil {
				t.Fatalf("count_tokens: %v", err)
			}
			if n.InputTokens <= 0 {
				t.Errorf("input_tokens = %d", n.InputTokens)
			}
			estimated := resp.Header.Get("X-Switchyard-Token-Count") == "estimated"
			if estimated != (k.provider == "openai") {
				t.Errorf("X-Switchyard-Token-Count %q for %s; Anthropic and Gemini count, only the others are estimated", resp.Header.Get("X-Switchyard-Token-Count"), k.provider)
			}
		})
	}
}

// TestMessagesModelList: the Anthropic SDK pages through /v1/models in its
// own shape.
func TestMessagesModelList(t *testing.T) {
	t.Parallel()
	c := anthropicClient(shared, demoKey)
	page, err := c.Models.List(context.Background(), anthropic.ModelListParams{})
	if err != nil {
		t.Fatalf("models: %v", err)
	}
	var ids []string
	for _, m := range page.Data {
		if m.Type != "model" || m.CreatedAt.IsZero() {
			t.Errorf("model %+v not in Anthropic's shape", m)
		}
		ids = append(ids, m.ID)
	}
	if !strings.Contains(strings.Join(ids, ","), "claude-3-5-haiku") || page.HasMore {
		t.Errorf("models %v, has_more %v", ids, page.HasMore)
	}
}

// TestMessagesFallbackBeforeFirstByte: an Anthropic model that fails
// before its first byte is replaced by the next model of the route, an
// OpenAI one, and the Messages client never notices — whole or streamed.
func TestMessagesFallbackBeforeFirstByte(t *testing.T) {
	s := fallbacks(t)
	if err := s.Sim.SetFault("anthropic", providersim.Fault{Mode: providersim.FaultStatus, Status: 529}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Sim.ClearFault("anthropic") }()
	c := anthropicClient(s, demoKey)
	var resp *http.Response
	msg, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "claude-3-5-haiku", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("fall back please"))},
	}, anthropicopt.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("the client saw the failure: %v", err)
	}
	if resp.Header.Get("x-switchyard-provider") != "openai" || msg.Model != "claude-3-5-haiku" || !strings.Contains(msg.Content[0].Text, "fall back please") {
		t.Errorf("served by %s as %q: %+v", resp.Header.Get("x-switchyard-provider"), msg.Model, msg.Content)
	}
	stream := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "claude-3-5-haiku", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("stream it anyway"))},
	}, anthropicopt.WithResponseInto(&resp))
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("streamed fallback: %v", err)
	}
	if resp.Header.Get("x-switchyard-provider") != "openai" || len(acc.Content) != 1 || !strings.Contains(acc.Content[0].Text, "stream it anyway") {
		t.Errorf("streamed: served by %s: %+v", resp.Header.Get("x-switchyard-provider"), acc.Content)
	}
}

// TestMessagesPassthroughKeepsTheBody: Anthropic gets the client's body as
// it was sent, but for the model name, and never the client's key.
func TestMessagesPassthroughKeepsTheBody(t *testing.T) {
	t.Parallel()
	body := `{"model":"claude-3-5-haiku","max_tokens":50,"messages":[{"role":"user","content":"keep   my   spacing"}],"metadata":{"user_id":"u-1"}}`
	resp, out := postMessages(t, body, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	st, err := shared.Sim.Stats("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(body, `"claude-3-5-haiku"`, `"claude-3-5-haiku-20241022"`, 1)
	for _, r := range st.Recent {
		if !strings.Contains(r.Body, "keep   my   spacing") {
			continue
		}
		if r.Body != want {
			t.Errorf("Anthropic got %s, want %s", r.Body, want)
		}
		if r.Header.Get("X-Api-Key") == demoKey || r.Header.Get("Anthropic-Version") != "2023-06-01" {
			t.Error("the provider got the client's key, or not the client's anthropic-version")
		}
		return
	}
	t.Fatal("the simulator recorded no pass-through request")
}
