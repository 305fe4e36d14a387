package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oashared "github.com/openai/openai-go/v3/shared"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// kinds lists one chat model per provider kind of e2e/testdata/all-kinds,
// with the provider that serves it.
var kinds = []struct{ model, provider string }{
	{"oa-chat", "oa"}, {"az-chat", "az"}, {"compat-chat", "compat"}, {"anth-chat", "anth"}, {"gem-chat", "gem"},
}

// providerKeys are the keys ext_proc reads from its environment; each
// simulator insists on its own, so a test passing proves the gateway put
// the right credential in the right header for every kind.
var providerKeys = map[string]string{
	"oa": "sk-e2e-openai", "az": "az-e2e-key", "compat": "compat-e2e-key", "anth": "sk-ant-e2e", "gem": "gem-e2e-key",
}

var (
	allKindsOnce  sync.Once
	allKindsStack *stack.Stack
	allKindsErr   error
)

// allKinds is a stack serving every provider kind, shared by the
// translation tests.
func allKinds(t *testing.T) *stack.Stack {
	t.Helper()
	allKindsOnce.Do(func() {
		root, _ := stack.ModuleRoot()
		env := []string{}
		for name, key := range providerKeys {
			env = append(env, "E2E_"+strings.ToUpper(name)+"_KEY="+key)
		}
		allKindsStack, allKindsErr = stack.Start(context.Background(), stack.Options{
			Policy:       filepath.Join(root, "e2e", "testdata", "all-kinds"),
			ProviderKeys: providerKeys,
			Env:          env,
		})
		if allKindsErr == nil {
			cleanups = append(cleanups, allKindsStack.Close)
			sharedStacks = append(sharedStacks, allKindsStack)
		}
	})
	if allKindsErr != nil {
		t.Fatalf("starting the all-kinds gateway: %v", allKindsErr)
	}
	return allKindsStack
}

func forEachKind(t *testing.T, f func(t *testing.T, model, provider string)) {
	for _, k := range kinds {
		t.Run(k.model, func(t *testing.T) {
			t.Parallel()
			f(t, k.model, k.provider)
		})
	}
}

// TestSameClientEveryKind sends the same request to every provider kind,
// changing only the model, and expects equivalent, correctly typed answers.
func TestSameClientEveryKind(t *testing.T) {
	s := allKinds(t)
	forEachKind(t, func(t *testing.T, model, provider string) {
		c := client(s, demoKey)
		var resp *http.Response
		got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("You are terse."),
				openai.UserMessage("What is the capital of Portugal?"),
			},
			Temperature: openai.Float(0.2),
			MaxTokens:   openai.Int(200),
		}, option.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
		if got.Model != model || got.Object != "chat.completion" || !strings.HasPrefix(got.ID, "chatcmpl") && got.ID == "" {
			t.Errorf("envelope: id %q object %q model %q", got.ID, got.Object, got.Model)
		}
		if len(got.Choices) != 1 || !strings.Contains(got.Choices[0].Message.Content, "What is the capital of Portu") || got.Choices[0].FinishReason != "stop" {
			t.Errorf("choice = %+v", got.Choices)
		}
		u := got.Usage
		if u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("usage = %+v", u)
		}
		if resp.Header.Get("x-switchyard-provider") != provider || resp.Header.Get("x-switchyard-model") != model {
			t.Errorf("served by %s/%s", resp.Header.Get("x-switchyard-provider"), resp.Header.Get("x-switchyard-model"))
		}
		noNativeFields(t, got.RawJSON())
	})
}

// noNativeFields fails when a provider-native field reaches the client.
func noNativeFields(t *testing.T, body string) {
	t.Helper()
	for _, native := range []string{`"stop_reason"`, `"candidates"`, `"usageMetadata"`, `"content_filter_results"`, `"prompt_filter_results"`, `"input_tokens"`, `"type":"message"`} {
		if strings.Contains(body, native) {
			t.Errorf("provider-native field %s reached the client: %s", native, body)
		}
	}
}

func TestStreamEveryKind(t *testing.T) {
	s := allKinds(t)
	forEachKind(t, func(t *testing.T, model, _ string) {
		c := client(s, demoKey)
		stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model:         model,
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me about rivers in Portugal")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		var acc openai.ChatCompletionAccumulator
		n := 0
		for stream.Next() {
			ch := stream.Current()
			if ch.Model != model || ch.Object != "chat.completion.chunk" {
				t.Errorf("chunk model %q object %q", ch.Model, ch.Object)
			}
			noNativeFields(t, ch.RawJSON())
			acc.AddChunk(ch)
			n++
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if n < 3 || !strings.Contains(acc.Choices[0].Message.Content, "Tell me about rivers") {
			t.Errorf("%d chunks, content %q", n, acc.Choices[0].Message.Content)
		}
		if acc.Choices[0].FinishReason != "stop" {
			t.Errorf("finish reason %q", acc.Choices[0].FinishReason)
		}
		if acc.Usage.TotalTokens == 0 || acc.Usage.CompletionTokens == 0 {
			t.Errorf("usage = %+v", acc.Usage)
		}
	})
}

var weatherTool = openai.ChatCompletionFunctionTool(oashared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("Weather in a city"),
	Parameters: openai.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
		"required":   []string{"city", "days"},
	},
})

// TestToolRoundTripEveryKind: the model calls a tool, the client answers
// with the result, the model uses it — streamed and not.
func TestToolRoundTripEveryKind(t *testing.T) {
	s := allKinds(t)
	forEachKind(t, func(t *testing.T, model, _ string) {
		c := client(s, demoKey)
		msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Lisbon?")}
		first, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: model, Messages: msgs, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		})
		if err != nil {
			t.Fatalf("first turn: %v", err)
		}
		ch := first.Choices[0]
		if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
			t.Fatalf("first turn: finish %q, tool calls %+v", ch.FinishReason, ch.Message.ToolCalls)
		}
		call := ch.Message.ToolCalls[0]
		var args map[string]any
		if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || call.Function.Name != "get_weather" || call.ID == "" {
			t.Fatalf("tool call %+v: arguments are not a JSON object: %v", call, err)
		}
		if _, ok := args["city"]; !ok {
			t.Errorf("arguments %v lack the required city", args)
		}
		msgs = append(msgs, ch.Message.ToParam(), openai.ToolMessage(`{"temp_c":21,"sky":"clear"}`, call.ID))
		second, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: model, Messages: msgs, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		})
		if err != nil {
			t.Fatalf("second turn: %v", err)
		}
		if got := second.Choices[0].Message.Content; !strings.Contains(got, "Tool result received") || second.Choices[0].FinishReason != "stop" {
			t.Errorf("second turn: %q (%s)", got, second.Choices[0].FinishReason)
		}
		// The same first turn, streamed: argument deltas reassemble by index.
		stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: model, Messages: msgs[:1], Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
		})
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("streamed tool call: %v", err)
		}
		if len(acc.Choices) == 0 || len(acc.Choices[0].Message.ToolCalls) != 1 || acc.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("streamed tool call: %+v", acc.Choices)
		}
		if err := json.Unmarshal([]byte(acc.Choices[0].Message.ToolCalls[0].Function.Arguments), &args); err != nil {
			t.Errorf("streamed arguments do not reassemble into JSON: %q", acc.Choices[0].Message.ToolCalls[0].Function.Arguments)
		}
	})
}

const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

func TestImagePartEveryKind(t *testing.T) {
	s := allKinds(t)
	forEachKind(t, func(t *testing.T, model, _ string) {
		c := client(s, demoKey)
		got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is in this picture?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + pixel}),
			})},
		})
		if err != nil {
			t.Fatalf("image: %v", err)
		}
		if !strings.Contains(got.Choices[0].Message.Content, "[1 image]") {
			t.Errorf("the provider did not see the image: %q", got.Choices[0].Message.Content)
		}
	})
}

func TestEmbeddings(t *testing.T) {
	s := allKinds(t)
	for _, model := range []string{"oa-embed", "compat-embed", "gem-embed"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			c := client(s, demoKey)
			got, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
				Model:          model,
				Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"harbour", "lighthouse"}},
				EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
			})
			if err != nil {
				t.Fatalf("embeddings: %v", err)
			}
			if len(got.Data) != 2 || len(got.Data[0].Embedding) == 0 || got.Data[1].Index != 1 || got.Model != model {
				t.Fatalf("embeddings = %d vectors, model %q", len(got.Data), got.Model)
			}
			if got.Usage.PromptTokens == 0 {
				t.Errorf("usage = %+v", got.Usage)
			}
			// Base64, as the Python SDK asks by default: the same vectors as
			// little-endian float32.
			body := `{"model":"` + model + `","input":["harbour","lighthouse"],"encoding_format":"base64"}`
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/embeddings", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+demoKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b64 struct {
				Data []struct {
					Embedding string `json:"embedding"`
				} `json:"data"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&b64); err != nil || len(b64.Data) != 2 {
				t.Fatalf("base64 answer (%d): %v", resp.StatusCode, err)
			}
			raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
			if err != nil || len(raw) != 4*len(got.Data[0].Embedding) {
				t.Fatalf("base64 vector: %d bytes, err %v", len(raw), err)
			}
			for i, f := range got.Data[0].Embedding {
				v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				if math.Abs(float64(v)-f) > 1e-6 {
					t.Fatalf("component %d: base64 %v, float %v", i, v, f)
				}
			}
		})
	}
}

// TestProviderErrorsEveryKind injects each error class into each provider
// and expects the OpenAI envelope with the right status.
func TestProviderErrorsEveryKind(t *testing.T) {
	s := allKinds(t)
	tests := []struct {
		name       string
		fault      providersim.Fault
		wantStatus int
		retryAfter bool
	}{
		{"rate limit", providersim.Fault{Mode: providersim.FaultStatus, Status: 429, RetryAfter: providersim.Duration(7e9)}, 429, true},
		{"overloaded", providersim.Fault{Mode: providersim.FaultStatus, Status: 503}, 503, false},
		{"server error", providersim.Fault{Mode: providersim.FaultStatus, Status: 500}, 502, false},
		{"html from a proxy", providersim.Fault{Mode: providersim.FaultStatus, Status: 502, Body: "<html><body>Bad Gateway</body></html>"}, 502, false},
		{"garbage with 200", providersim.Fault{Mode: providersim.FaultMalformed}, 502, false},
		{"empty body", providersim.Fault{Mode: providersim.FaultMalformed, Body: " "}, 502, false},
	}
	// One provider at a time: faults are per provider, and the requests of
	// the other kinds must not see them.
	for _, k := range kinds {
		t.Run(k.model, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					f := tt.fault
					f.Count = 1
					if err := s.Sim.SetFault(k.provider, f); err != nil {
						t.Fatal(err)
					}
					defer func() { _ = s.Sim.ClearFault(k.provider) }()
					var resp *http.Response
					c := client(s, demoKey)
					_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
						Model:    k.model,
						Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
					}, option.WithResponseInto(&resp))
					var apiErr *openai.Error
					if !errors.As(err, &apiErr) {
						t.Fatalf("err = %v, want an API error", err)
					}
					if apiErr.StatusCode != tt.wantStatus {
						t.Errorf("status %d, want %d: %s", apiErr.StatusCode, tt.wantStatus, apiErr.RawJSON())
					}
					if apiErr.Message == "" || apiErr.Type == "" {
						t.Errorf("not an OpenAI envelope: %s", apiErr.RawJSON())
					}
					if tt.retryAfter && resp.Header.Get("Retry-After") == "" {
						t.Error("retry-after was not passed through")
					}
					for _, key := range providerKeys {
						if strings.Contains(apiErr.RawJSON(), key) {
							t.Error("a provider key leaked into the error")
						}
					}
				})
			}
		})
	}
	// Anthropic's own overload status.
	if err := s.Sim.SetFault("anth", providersim.Fault{Mode: providersim.FaultStatus, Status: 529, Count: 1}); err != nil {
		t.Fatal(err)
	}
	c := client(s, demoKey)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "anth-chat", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Errorf("Anthropic 529: %v, want 503", err)
	}
}

// TestStreamCutMidWay: a stream that breaks after the first bytes ends
// with an error event the SDK raises, never a silent clean end.
func TestStreamCutMidWay(t *testing.T) {
	s := allKinds(t)
	for _, k := range kinds {
		t.Run(k.model, func(t *testing.T) {
			if err := s.Sim.SetFault(k.provider, providersim.Fault{Mode: providersim.FaultCutStream, Chunks: 2, Count: 1}); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Sim.ClearFault(k.provider) }()
			c := client(s, demoKey)
			stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model:    k.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("a long answer please, with many words in it")},
			})
			for stream.Next() {
			}
			if stream.Err() == nil {
				t.Fatal("a cut stream ended cleanly")
			}
		})
	}
}

// TestLargeBodies: a request up to 10 MiB passes; beyond the limit the
// client gets 413 in the OpenAI envelope.
func TestLargeBodies(t *testing.T) {
	s := allKinds(t)
	// A large image is a large body but few tokens.
	post := func(size int) (*http.Response, []byte) {
		content := strings.Repeat("A", size)
		body := `{"model":"gem-chat","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"describe"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + content + `"}}]}]}`
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", bytes.NewReader([]byte(body)))
		req.Header.Set("Authorization", "Bearer "+demoKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := post(10<<20 - 1024)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("10 MiB: status %d: %.300s", resp.StatusCode, b)
	}
	resp, b = post(11 << 20)
	var env struct {
		Error struct{ Message, Type string } `json:"error"`
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(b, &env) != nil || env.Error.Message == "" {
		t.Errorf("11 MiB: status %d, body %.300s; want 413 in the OpenAI envelope", resp.StatusCode, b)
	}
}
