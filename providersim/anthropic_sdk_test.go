package providersim_test

import (
	"errors"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/providersim"
)

// messageOutcome is what a test asserts about one Anthropic message.
type messageOutcome struct {
	Model       string
	Text        string
	StopReason  string
	ToolName    string
	ToolInput   string
	InputTokens int64
	CacheRead   int64
	// CacheWrite is cache_creation_input_tokens, CacheWrites its
	// breakdown: 5 minutes, 1 hour.
	CacheWrite   int64
	CacheWrites  [2]int64
	OutputTokens int64
}

func messageOutcomeOf(m anthropic.Message) messageOutcome {
	o := messageOutcome{
		Model: m.Model, StopReason: string(m.StopReason),
		InputTokens: m.Usage.InputTokens, CacheRead: m.Usage.CacheReadInputTokens, OutputTokens: m.Usage.OutputTokens,
		CacheWrite:  m.Usage.CacheCreationInputTokens,
		CacheWrites: [2]int64{m.Usage.CacheCreation.Ephemeral5mInputTokens, m.Usage.CacheCreation.Ephemeral1hInputTokens},
	}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			o.Text += b.Text
		case "tool_use":
			o.ToolName, o.ToolInput = b.Name, string(b.Input)
		}
	}
	return o
}

func TestAnthropicSDK(t *testing.T) {
	sim, _ := startSim(t, providersim.ProviderConfig{Kind: providersim.KindAnthropic, ExpectKey: "ant-key"})
	client := anthropic.NewClient(option.WithBaseURL(sim.URL("anthropic")), option.WithAPIKey("ant-key"), option.WithMaxRetries(0))
	const model = "claude-sonnet-4-5"
	tools := []anthropic.ToolUnionParam{
		{OfTool: &anthropic.ToolParam{Name: "get_weather", InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
			Required:   []string{"city", "days"},
		}}},
		{OfTool: &anthropic.ToolParam{Name: "get_time", InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"zone": map[string]any{"type": "string"}},
			Required:   []string{"zone"},
		}}},
	}
	hi := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi there"))}
	tests := []struct {
		name   string
		params anthropic.MessageNewParams
		want   messageOutcome
	}{
		{
			name:   "text",
			params: anthropic.MessageNewParams{Model: model, MaxTokens: 100, Messages: hi},
			want:   messageOutcome{Text: "Hello from claude-sonnet-4-5: Hi there", StopReason: "end_turn", InputTokens: 5, OutputTokens: 5},
		},
		{
			name:   "max tokens truncate",
			params: anthropic.MessageNewParams{Model: model, MaxTokens: 3, Messages: hi},
			want:   messageOutcome{Text: "Hello from claude-sonnet-4-5:", StopReason: "max_tokens", InputTokens: 5, OutputTokens: 3},
		},
		{
			name: "image",
			params: anthropic.MessageNewParams{Model: model, MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
				anthropic.NewTextBlock("What is this?"), anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo="), anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo="),
			)}},
			want: messageOutcome{Text: "Hello from claude-sonnet-4-5: What is this? [2 images]", StopReason: "end_turn", InputTokens: 7, OutputTokens: 8},
		},
		{
			name: "cache control reads half the prompt from the cache and writes a quarter",
			params: anthropic.MessageNewParams{
				Model: model, MaxTokens: 100, Messages: hi,
				System: []anthropic.TextBlockParam{{Text: "A stable system prompt", CacheControl: anthropic.NewCacheControlEphemeralParam()}},
			},
			// 8+22 characters -> 8 tokens, plus 3 for each of 2 messages = 14.
			want: messageOutcome{Text: "Hello from claude-sonnet-4-5: Hi there", StopReason: "end_turn", InputTokens: 4, CacheRead: 7,
				CacheWrite: 3, CacheWrites: [2]int64{3, 0}, OutputTokens: 5},
		},
		{
			name: "every mark for an hour: the writes are an hour's",
			params: anthropic.MessageNewParams{
				Model: model, MaxTokens: 100, Messages: hi,
				System: []anthropic.TextBlockParam{{Text: "A stable system prompt", CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}}},
			},
			want: messageOutcome{Text: "Hello from claude-sonnet-4-5: Hi there", StopReason: "end_turn", InputTokens: 4, CacheRead: 7,
				CacheWrite: 3, CacheWrites: [2]int64{0, 3}, OutputTokens: 5},
		},
		{
			name: "some marks for an hour: half the writes are",
			params: anthropic.MessageNewParams{
				Model: model, MaxTokens: 100,
				System:   []anthropic.TextBlockParam{{Text: "A stable system prompt", CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}}},
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: "Hi there", CacheControl: anthropic.NewCacheControlEphemeralParam()}})},
			},
			want: messageOutcome{Text: "Hello from claude-sonnet-4-5: Hi there", StopReason: "end_turn", InputTokens: 4, CacheRead: 7,
				CacheWrite: 3, CacheWrites: [2]int64{2, 1}, OutputTokens: 5},
		},
		{
			name:   "tool use",
			params: anthropic.MessageNewParams{Model: model, MaxTokens: 100, Messages: hi, Tools: tools},
			want:   messageOutcome{StopReason: "tool_use", ToolName: "get_weather", ToolInput: `{"city":"x","days":1}`, InputTokens: 5, OutputTokens: 8},
		},
		{
			name:   "forced tool",
			params: anthropic.MessageNewParams{Model: model, MaxTokens: 100, Messages: hi, Tools: tools, ToolChoice: anthropic.ToolChoiceParamOfTool("get_time")},
			want:   messageOutcome{StopReason: "tool_use", ToolName: "get_time", ToolInput: `{"zone":"x"}`, InputTokens: 5, OutputTokens: 5},
		},
		{
			name: "tool choice none",
			params: anthropic.MessageNewParams{
				Model: model, MaxTokens: 100, Messages: hi, Tools: tools,
				ToolChoice: anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}},
			},
			want: messageOutcome{Text: "Hello from claude-sonnet-4-5: Hi there", StopReason: "end_turn", InputTokens: 5, OutputTokens: 5},
		},
		{
			name: "tool result",
			params: anthropic.MessageNewParams{Model: model, MaxTokens: 100, Tools: tools, Messages: []anthropic.MessageParam{
				anthropic.NewUserMessage(anthropic.NewTextBlock("Hi there")),
				anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_1", map[string]any{"city": "Oslo", "days": 1}, "get_weather")),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "sunny", false)),
			}},
			want: messageOutcome{Text: "Tool result received: sunny", StopReason: "end_turn", InputTokens: 13, OutputTokens: 4},
		},
	}
	for _, tt := range tests {
		tt.want.Model = model
		t.Run(tt.name, func(t *testing.T) {
			got, err := client.Messages.New(t.Context(), tt.params)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if diff := cmp.Diff(tt.want, messageOutcomeOf(*got)); diff != "" {
				t.Errorf("message mismatch (-want +got):\n%s", diff)
			}
		})
		t.Run(tt.name+"/stream", func(t *testing.T) {
			stream := client.Messages.NewStreaming(t.Context(), tt.params)
			defer stream.Close()
			var msg anthropic.Message
			events := map[string]int{}
			for stream.Next() {
				ev := stream.Current()
				events[ev.Type]++
				if err := msg.Accumulate(ev); err != nil {
					t.Fatalf("Accumulate(%s): %v", ev.Type, err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			if diff := cmp.Diff(tt.want, messageOutcomeOf(msg)); diff != "" {
				t.Errorf("accumulated message mismatch (-want +got):\n%s", diff)
			}
			for _, name := range []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"} {
				if events[name] == 0 {
					t.Errorf("got no %s event; events: %v", name, events)
				}
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		bad := anthropic.NewClient(option.WithBaseURL(sim.URL("anthropic")), option.WithAPIKey("nope"), option.WithMaxRetries(0))
		_, err := bad.Messages.New(t.Context(), tests[0].params)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Type() != "authentication_error" {
			t.Errorf("got %v, want a 401 authentication_error", err)
		}
	})
}
