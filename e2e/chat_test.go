package e2e

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func TestChatCompletion(t *testing.T) {
	t.Parallel()
	c := client(shared, demoKey)
	var resp *http.Response
	got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("chat completion: %v", err)
	}
	if got.Object != "chat.completion" || got.Model != "gpt-4o-mini" {
		t.Errorf("object, model = %q, %q; want chat.completion, gpt-4o-mini", got.Object, got.Model)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != "Hello from gpt-4o-mini: hi" || got.Choices[0].FinishReason != "stop" {
		t.Errorf("choices = %+v; want one stop choice with the simulator's reply", got.Choices)
	}
	if got.Usage.PromptTokens == 0 || got.Usage.CompletionTokens == 0 || got.Usage.TotalTokens != got.Usage.PromptTokens+got.Usage.CompletionTokens {
		t.Errorf("usage = %+v; want non-zero, consistent counts", got.Usage)
	}
	for k, want := range map[string]string{"x-switchyard-model": "gpt-4o-mini", "x-switchyard-provider": "openai"} {
		if v := resp.Header.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("X-Request-Id missing")
	}
	// The provider saw the gateway's request: no client key, its own model name.
	st, err := shared.Sim.Stats("openai")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Recent) == 0 {
		t.Fatal("the simulator recorded no request")
	}
	for _, r := range st.Recent {
		if r.Header.Get("Authorization") == "Bearer "+demoKey {
			t.Fatalf("the client's virtual key reached the provider")
		}
	}
}

func TestChatCompletionStreamWithUsage(t *testing.T) {
	t.Parallel()
	c := client(shared, demoKey)
	var resp *http.Response
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "gpt-4o-mini",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me a story")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithResponseInto(&resp))
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		if ch.Object != "chat.completion.chunk" {
			t.Errorf("chunk object = %q", ch.Object)
		}
		acc.AddChunk(ch)
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if chunks < 3 {
		t.Errorf("got %d chunks, want a real stream", chunks)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello from gpt-4o-mini: tell me a story" {
		t.Errorf("streamed content = %q", got)
	}
	if acc.Usage.TotalTokens == 0 || acc.Usage.CompletionTokens == 0 {
		t.Errorf("usage = %+v; want the final usage chunk", acc.Usage)
	}
	if v := resp.Header.Get("x-switchyard-model"); v != "gpt-4o-mini" {
		t.Errorf("x-switchyard-model = %q", v)
	}
}

func TestStreamWithoutUsageHasNoUsageChunk(t *testing.T) {
	t.Parallel()
	c := client(shared, demoKey)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) == 0 {
			t.Errorf("got a chunk without choices (a usage chunk the client did not ask for): %s", ch.RawJSON())
		}
		if ch.JSON.Usage.Valid() && ch.Usage.TotalTokens != 0 {
			t.Errorf("chunk carries usage the client did not ask for: %s", ch.RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		key, model string
		wantStatus int
		wantCode   string
	}{
		{"bad key", "sk-wrong", "gpt-4o-mini", http.StatusUnauthorized, "invalid_api_key"},
		{"missing key", "", "gpt-4o-mini", http.StatusUnauthorized, "missing_api_key"},
		{"unknown model", demoKey, "gpt-9-ultra", http.StatusNotFound, "model_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := client(shared, tt.key)
			_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    tt.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want an API error", err)
			}
			if apiErr.StatusCode != tt.wantStatus || apiErr.Code != tt.wantCode {
				t.Errorf("got %d %q, want %d %q (%s)", apiErr.StatusCode, apiErr.Code, tt.wantStatus, tt.wantCode, apiErr.Message)
			}
			if tt.key != "" && containsSecret(apiErr.RawJSON(), tt.key) {
				t.Errorf("the error echoes the key")
			}
		})
	}
}
