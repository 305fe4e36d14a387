package providersim_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchyard/switchyard/providersim"
)

// chatOutcome is what a test asserts about one chat completion, however
// it arrived.
type chatOutcome struct {
	Model      string
	Content    string
	Finish     string
	ToolName   string
	ToolArgs   string
	Prompt     int64
	Completion int64
}

func outcomeOf(c openai.ChatCompletion) chatOutcome {
	o := chatOutcome{Model: c.Model, Prompt: c.Usage.PromptTokens, Completion: c.Usage.CompletionTokens}
	if len(c.Choices) == 0 {
		return o
	}
	ch := c.Choices[0]
	o.Content, o.Finish = ch.Message.Content, ch.FinishReason
	if len(ch.Message.ToolCalls) > 0 {
		o.ToolName, o.ToolArgs = ch.Message.ToolCalls[0].Function.Name, ch.Message.ToolCalls[0].Function.Arguments
	}
	return o
}

var weatherTools = []openai.ChatCompletionToolUnionParam{
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather",
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
			"required":   []string{"city", "days"},
		},
	}),
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_time",
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"zone": map[string]any{"type": "string"}},
			"required":   []string{"zone"},
		},
	}),
}

func chatCases(model string) []struct {
	name   string
	params openai.ChatCompletionNewParams
	want   chatOutcome
} {
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi there")}
	// "Hi there": 8 characters -> 2 tokens, plus 3 for the one message.
	const prompt = 5
	return []struct {
		name   string
		params openai.ChatCompletionNewParams
		want   chatOutcome
	}{
		{
			name:   "text",
			params: openai.ChatCompletionNewParams{Model: model, Messages: user},
			want:   chatOutcome{Content: "Hello from " + model + ": Hi there", Finish: "stop", Prompt: prompt, Completion: 5},
		},
		{
			name:   "max tokens truncate",
			params: openai.ChatCompletionNewParams{Model: model, Messages: user, MaxCompletionTokens: openai.Int(2)},
			want:   chatOutcome{Content: "Hello from", Finish: "length", Prompt: prompt, Completion: 2},
		},
		{
			name:   "tool call to the first tool",
			params: openai.ChatCompletionNewParams{Model: model, Messages: user, Tools: weatherTools},
			want:   chatOutcome{Finish: "tool_calls", ToolName: "get_weather", ToolArgs: `{"city":"x","days":1}`, Prompt: prompt, Completion: 8},
		},
		{
			name: "forced tool",
			params: openai.ChatCompletionNewParams{
				Model: model, Messages: user, Tools: weatherTools,
				ToolChoice: openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"}),
			},
			want: chatOutcome{Finish: "tool_calls", ToolName: "get_time", ToolArgs: `{"zone":"x"}`, Prompt: prompt, Completion: 5},
		},
		{
			name: "tool choice none",
			params: openai.ChatCompletionNewParams{
				Model: model, Messages: user, Tools: weatherTools,
				ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("none")},
			},
			want: chatOutcome{Content: "Hello from " + model + ": Hi there", Finish: "stop", Prompt: prompt, Completion: 5},
		},
		{
			name: "tool result",
			params: openai.ChatCompletionNewParams{Model: model, Tools: weatherTools, Messages: []openai.ChatCompletionMessageParamUnion{
				openai.UserMessage("Hi there"),
				{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Oslo","days":1}`}},
				}}}},
				openai.ToolMessage("sunny", "call_1"),
			}},
			// 13 characters over 3 messages: 4 + 9.
			want: chatOutcome{Content: "Tool result received: sunny", Finish: "stop", Prompt: 13, Completion: 4},
		},
	}
}

// TestOpenAISDK drives the openai and openai_compatible simulators through
// the official SDK, streaming and not.
func TestOpenAISDK(t *testing.T) {
	for _, kind := range []providersim.Kind{providersim.KindOpenAI, providersim.KindOpenAICompatible} {
		sim, _ := startKind(t, kind)
		client := openai.NewClient(option.WithBaseURL(sim.URL(string(kind))+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
		wantModel := "gpt-4o-mini-2024-07-18"
		if kind == providersim.KindOpenAICompatible {
			wantModel = "gpt-4o-mini"
		}
		for _, tt := range chatCases("gpt-4o-mini") {
			tt.want.Model = wantModel
			t.Run(string(kind)+"/"+tt.name, func(t *testing.T) {
				got, err := client.Chat.Completions.New(t.Context(), tt.params)
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if diff := cmp.Diff(tt.want, outcomeOf(*got)); diff != "" {
					t.Errorf("completion mismatch (-want +got):\n%s", diff)
				}
			})
			t.Run(string(kind)+"/"+tt.name+"/stream", func(t *testing.T) {
				params := tt.params
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				got, chunks := accumulate(t, client, params)
				if diff := cmp.Diff(tt.want, outcomeOf(got)); diff != "" {
					t.Errorf("accumulated stream mismatch (-want +got):\n%s", diff)
				}
				if chunks < 3 {
					t.Errorf("got %d chunks, want the reply split over several", chunks)
				}
			})
		}
	}
}

// accumulate streams a completion and folds it with the SDK's accumulator.
func accumulate(t *testing.T, client openai.Client, params openai.ChatCompletionNewParams, opts ...option.RequestOption) (openai.ChatCompletion, int) {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(t.Context(), params, opts...)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	n := 0
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("accumulator rejected chunk %d: %s", n, stream.Current().RawJSON())
		}
		n++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return acc.ChatCompletion, n
}

func TestOpenAISDKAzure(t *testing.T) {
	sim, _ := startSim(t, providersim.ProviderConfig{Name: "azure", Kind: providersim.KindAzureOpenAI, ExpectKey: "azure-key"})
	client := openai.NewClient(
		azure.WithEndpoint(sim.URL("azure"), "2024-10-21"),
		azure.WithAPIKey("azure-key"),
		azure.WithUnsafeAllowHTTP(),
		option.WithMaxRetries(0),
	)
	for _, tt := range chatCases("gpt-4o") {
		tt.want.Model = "gpt-4o-2024-07-18"
		t.Run(tt.name, func(t *testing.T) {
			got, err := client.Chat.Completions.New(t.Context(), tt.params)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if diff := cmp.Diff(tt.want, outcomeOf(*got)); diff != "" {
				t.Errorf("completion mismatch (-want +got):\n%s", diff)
			}
		})
		t.Run(tt.name+"/stream", func(t *testing.T) {
			params := tt.params
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			got, _ := accumulate(t, client, params)
			if diff := cmp.Diff(tt.want, outcomeOf(got)); diff != "" {
				t.Errorf("accumulated stream mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("deployment URL and api-key header", func(t *testing.T) {
		st, err := sim.Stats("azure")
		if err != nil {
			t.Fatal(err)
		}
		last := st.Recent[len(st.Recent)-1]
		got := []string{last.Path, last.Query, last.Header.Get("api-key"), last.Header.Get("Authorization")}
		want := []string{"/openai/deployments/gpt-4o/chat/completions", "api-version=2024-10-21", "azure-key", ""}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("forwarded request mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		got, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
			Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("alpha")}, Dimensions: openai.Int(3),
		})
		if err != nil {
			t.Fatalf("Embeddings: %v", err)
		}
		if len(got.Data) != 1 || len(got.Data[0].Embedding) != 3 {
			t.Errorf("got %d embeddings of %v, want 1 of 3 dimensions", len(got.Data), got.Data)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		bad := openai.NewClient(azure.WithEndpoint(sim.URL("azure"), "2024-10-21"), azure.WithAPIKey("nope"), azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
		_, err := bad.Chat.Completions.New(t.Context(), chatCases("gpt-4o")[0].params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "401" {
			t.Errorf("got %v, want a 401 API error with code \"401\"", err)
		}
	})
}

func TestOpenAISDKEmbeddings(t *testing.T) {
	sim, _ := startKind(t, providersim.KindOpenAI)
	client := openai.NewClient(option.WithBaseURL(sim.URL("openai")+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	get := func(format openai.EmbeddingNewParamsEncodingFormat) *openai.CreateEmbeddingResponse {
		t.Helper()
		resp, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
			Model:          "text-embedding-3-small",
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha", "beta", "alpha"}},
			Dimensions:     openai.Int(6),
			EncodingFormat: format,
		})
		if err != nil {
			t.Fatalf("Embeddings(%q): %v", format, err)
		}
		return resp
	}
	float, b64, dflt := get(openai.EmbeddingNewParamsEncodingFormatFloat), get(openai.EmbeddingNewParamsEncodingFormatBase64), get("")
	// JSON floats and base64 bytes carry the same float32 values.
	vectors := func(r *openai.CreateEmbeddingResponse) [][]float32 {
		var out [][]float32
		for _, d := range r.Data {
			v := make([]float32, len(d.Embedding))
			for i, f := range d.Embedding {
				v[i] = float32(f)
			}
			out = append(out, v)
		}
		return out
	}
	want := vectors(float)
	if diff := cmp.Diff(want, vectors(b64)); diff != "" {
		t.Errorf("base64 embeddings differ from float ones (-float +base64):\n%s", diff)
	}
	if diff := cmp.Diff(want, vectors(dflt)); diff != "" {
		t.Errorf("default-format embeddings differ from float ones (-float +default):\n%s", diff)
	}
	if len(want) != 3 || len(want[0]) != 6 || !cmp.Equal(want[0], want[2]) || cmp.Equal(want[0], want[1]) {
		t.Errorf("got %v, want 3 vectors of 6 where equal inputs (only) give equal vectors", want)
	}
	// ceil(chars/4) per input: alpha 2, beta 1, alpha 2.
	if got := float.Usage.PromptTokens; got != 5 {
		t.Errorf("got %d prompt tokens, want 5", got)
	}
}

func TestOpenAISDKModels(t *testing.T) {
	sim, _ := startSim(t, providersim.ProviderConfig{Kind: providersim.KindOpenAI, Models: []string{"gpt-a", "gpt-b"}})
	client := openai.NewClient(option.WithBaseURL(sim.URL("openai")+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	page, err := client.Models.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var got []string
	for _, m := range page.Data {
		got = append(got, m.ID)
	}
	if diff := cmp.Diff([]string{"gpt-a", "gpt-b"}, got); diff != "" {
		t.Errorf("models mismatch (-want +got):\n%s", diff)
	}
	_, err = client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-c", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("got %v, want 404 model_not_found for a model outside Models", err)
	}
}
