package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/translator"
)

// simProvider is one simulated provider behind a translator.
type simProvider struct {
	ct         caseTarget
	simKind    providersim.Kind
	embedModel string
	wantEchoed string // the model name the simulator echoes in its text
}

var simProviders = map[string]simProvider{
	"openai":  {ct: caseTarget{Kind: "openai", Upstream: "gpt-4o-mini"}, simKind: providersim.KindOpenAI, embedModel: "text-embedding-3-small", wantEchoed: "gpt-4o-mini"},
	"azure":   {ct: caseTarget{Kind: "azure_openai", Upstream: "gpt4o-prod", APIVersion: "2024-10-21"}, simKind: providersim.KindAzureOpenAI, embedModel: "embed-prod", wantEchoed: "gpt4o-prod"},
	"mistral": {ct: caseTarget{Kind: "openai_compatible", Dialect: "mistral", Upstream: "mistral-small"}, simKind: providersim.KindOpenAICompatible, embedModel: "mistral-embed", wantEchoed: "mistral-small"},
	"vllm":    {ct: caseTarget{Kind: "openai_compatible", Dialect: "vllm", Upstream: "qwen2.5-7b"}, simKind: providersim.KindOpenAICompatible, embedModel: "bge-m3", wantEchoed: "qwen2.5-7b"},
}

// miniGateway does what the translate filter does around a translator,
// without Envoy: translate the request, call the provider, translate the
// answer, streams in small odd-sized pieces so events straddle them.
func miniGateway(t *testing.T, providerURL string, p simProvider) *httptest.Server {
	t.Helper()
	fail := func(w http.ResponseWriter, e *openaiapi.Error) {
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(e.Status)
		w.Write(e.Body())
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read client body: %v", err)
			return
		}
		embeddings := strings.HasSuffix(r.URL.Path, "/embeddings")
		ct := p.ct
		if embeddings {
			ct.Upstream = p.embedModel
		}
		tr := NewWithDialect(target(ct), Dialect(ct.Dialect))
		var up translator.Upstream
		var e *openaiapi.Error
		if embeddings {
			req, pe := openaiapi.ParseEmbeddingsRequest(body)
			if pe != nil {
				fail(w, pe)
				return
			}
			up, e = tr.EmbeddingsRequest(req, body)
		} else {
			req, pe := openaiapi.ParseChatRequest(body)
			if pe != nil {
				fail(w, pe)
				return
			}
			up, e = tr.Request(req, body)
		}
		if e != nil {
			fail(w, e)
			return
		}
		preq, err := http.NewRequestWithContext(r.Context(), http.MethodPost, providerURL+up.Path, bytes.NewReader(up.Body))
		if err != nil {
			t.Errorf("provider request: %v", err)
			return
		}
		for _, h := range up.Header {
			preq.Header.Set(h.Key, h.Value)
		}
		resp, err := http.DefaultClient.Do(preq)
		if err != nil {
			t.Errorf("provider: %v", err)
			return
		}
		defer resp.Body.Close()
		var h translator.Headers
		for k, vs := range resp.Header {
			h = append(h, translator.Header{Key: strings.ToLower(k), Value: vs[0]})
		}
		if !embeddings && tr.IsStream(resp.StatusCode, h) {
			w.Header().Set("content-type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			buf := make([]byte, 97)
			for {
				n, err := resp.Body.Read(buf)
				w.Write(tr.StreamChunk(buf[:n], err != nil))
				w.(http.Flusher).Flush()
				if err != nil {
					return
				}
			}
		}
		all, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Errorf("provider body: %v", err)
			return
		}
		var res translator.Result
		if embeddings {
			res = tr.EmbeddingsComplete(resp.StatusCode, h, all)
		} else {
			res = tr.Complete(resp.StatusCode, h, all)
		}
		for _, kv := range res.Header {
			w.Header().Set(kv.Key, kv.Value)
		}
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(res.Status)
		w.Write(res.Body)
	}))
}

// startBehindGateway starts the simulator of provider name, which takes
// only simKey, behind a miniGateway, and returns an SDK client of the
// gateway, the gateway's URL and the provider.
func startBehindGateway(t *testing.T, name, simKey string) (openai.Client, string, simProvider) {
	t.Helper()
	p := simProviders[name]
	sim, err := providersim.Start(t.Context(), providersim.Config{
		Providers: []providersim.ProviderConfig{{Name: name, Kind: p.simKind, ExpectKey: simKey, Models: []string{p.ct.Upstream, p.embedModel}}},
		Now:       func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	gw := miniGateway(t, sim.URL(name), p)
	t.Cleanup(gw.Close)
	client := openai.NewClient(option.WithBaseURL(gw.URL+"/v1/"), option.WithAPIKey("vk-client"), option.WithMaxRetries(0))
	return client, gw.URL, p
}

// sdkOutcome is what the SDK hands the application.
type sdkOutcome struct {
	Model, Content, Finish, ToolName, ToolArgs string
	Prompt, Completion                         int64
}

func sdkOutcomeOf(c openai.ChatCompletion) sdkOutcome {
	o := sdkOutcome{Model: c.Model, Prompt: c.Usage.PromptTokens, Completion: c.Usage.CompletionTokens}
	if len(c.Choices) > 0 {
		ch := c.Choices[0]
		o.Content, o.Finish = ch.Message.Content, ch.FinishReason
		if len(ch.Message.ToolCalls) > 0 {
			o.ToolName, o.ToolArgs = ch.Message.ToolCalls[0].Function.Name, ch.Message.ToolCalls[0].Function.Arguments
		}
	}
	return o
}

var sdkTools = []openai.ChatCompletionToolUnionParam{
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather",
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []string{"city"},
		},
	}),
}

// TestSDKThroughTranslator drives every provider kind through the
// translator with the official openai-go client, whole and streamed: the
// same client code gets the same typed answers whichever provider serves.
func TestSDKThroughTranslator(t *testing.T) {
	history := []openai.ChatCompletionMessageParamUnion{
		openai.DeveloperMessage("Be brief."),
		openai.UserMessage("Hi there"),
		{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_Vb81kQzP3xRm2Lw9", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Oslo"}`}},
		}}}},
		openai.ToolMessage("sunny", "call_Vb81kQzP3xRm2Lw9"),
	}
	for _, name := range []string{"openai", "azure", "mistral", "vllm"} {
		t.Run(name, func(t *testing.T) {
			client, _, p := startBehindGateway(t, name, testKey)
			user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi there")}
			tests := []struct {
				name   string
				params openai.ChatCompletionNewParams
				want   sdkOutcome
			}{
				{"text", openai.ChatCompletionNewParams{Model: "m", Messages: user},
					sdkOutcome{Content: "Hello from " + p.wantEchoed + ": Hi there", Finish: "stop"}},
				{"output cap", openai.ChatCompletionNewParams{Model: "m", Messages: user, MaxCompletionTokens: openai.Int(2)},
					sdkOutcome{Content: "Hello from", Finish: "length"}},
				{"tool call", openai.ChatCompletionNewParams{Model: "m", Messages: user, Tools: sdkTools},
					sdkOutcome{Finish: "tool_calls", ToolName: "get_weather", ToolArgs: `{"city":"x"}`}},
				{"tool result with the client's ids", openai.ChatCompletionNewParams{Model: "m", Messages: history, Tools: sdkTools},
					sdkOutcome{Content: "Tool result received: sunny", Finish: "stop"}},
			}
			for _, tt := range tests {
				tt.want.Model = "client-model"
				t.Run(tt.name, func(t *testing.T) {
					got, err := client.Chat.Completions.New(t.Context(), tt.params)
					if err != nil {
						t.Fatalf("New: %v", err)
					}
					o := sdkOutcomeOf(*got)
					if o.Prompt == 0 || o.Completion == 0 {
						t.Errorf("got usage %d/%d, want both counted", o.Prompt, o.Completion)
					}
					o.Prompt, o.Completion = 0, 0
					if diff := cmp.Diff(tt.want, o); diff != "" {
						t.Errorf("completion (-want +got):\n%s", diff)
					}
				})
				for _, includeUsage := range []bool{true, false} {
					t.Run(tt.name+"/stream", func(t *testing.T) {
						params := tt.params
						if includeUsage {
							params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
						}
						stream := client.Chat.Completions.NewStreaming(t.Context(), params)
						defer stream.Close()
						var acc openai.ChatCompletionAccumulator
						usageChunks := 0
						for stream.Next() {
							c := stream.Current()
							if !acc.AddChunk(c) {
								t.Fatalf("accumulator rejected %s", c.RawJSON())
							}
							if c.JSON.Usage.Valid() && c.Usage.TotalTokens > 0 {
								usageChunks++
								if len(c.Choices) != 0 {
									t.Errorf("usage on a chunk with choices: %s", c.RawJSON())
								}
							}
						}
						if err := stream.Err(); err != nil {
							t.Fatalf("stream: %v", err)
						}
						want := 0
						// Mistral is never sent stream_options (it rejects them) and
						// reports usage on its own; the simulator's compatible
						// flavour reports usage only when asked, as vLLM does, so
						// behind the mistral dialect it reports none.
						if includeUsage && name != "mistral" {
							want = 1
						}
						if usageChunks != want {
							t.Errorf("got %d usage chunks, want %d", usageChunks, want)
						}
						o := sdkOutcomeOf(acc.ChatCompletion)
						o.Prompt, o.Completion = 0, 0
						if diff := cmp.Diff(tt.want, o); diff != "" {
							t.Errorf("accumulated stream (-want +got):\n%s", diff)
						}
					})
				}
			}
			t.Run("embeddings", func(t *testing.T) {
				got, err := client.Embeddings.New(t.Context(), openai.EmbeddingNewParams{
					Model: "m", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"alpha", "beta"}},
					EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
				})
				if err != nil {
					t.Fatalf("Embeddings: %v", err)
				}
				if got.Model != "client-model" || len(got.Data) != 2 || len(got.Data[1].Embedding) == 0 || got.Usage.PromptTokens == 0 {
					t.Fatalf("got model %q, %d vectors, usage %d; want client-model, 2 vectors, usage counted", got.Model, len(got.Data), got.Usage.PromptTokens)
				}
			})
		})
	}
}

// TestEmbeddingsBase64ThroughTranslator: a client asking for base64 (the
// Python SDK's default) gets the same vectors as one asking for floats,
// whether the provider encodes them or the gateway does (mistral).
func TestEmbeddingsBase64ThroughTranslator(t *testing.T) {
	post := func(t *testing.T, url, format string) []byte {
		t.Helper()
		resp, err := http.Post(url+"/v1/embeddings", "application/json",
			strings.NewReader(`{"model":"m","input":["alpha","beta"],"encoding_format":"`+format+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("got %d %s (%v), want 200", resp.StatusCode, b, err)
		}
		return b
	}
	for _, name := range []string{"openai", "azure", "mistral"} {
		t.Run(name, func(t *testing.T) {
			_, url, _ := startBehindGateway(t, name, testKey)
			var floats struct {
				Data []struct {
					Embedding []float32 `json:"embedding"`
				} `json:"data"`
			}
			if err := json.Unmarshal(post(t, url, "float"), &floats); err != nil {
				t.Fatal(err)
			}
			var b64 struct {
				Data []struct {
					Embedding string `json:"embedding"`
				} `json:"data"`
			}
			if err := json.Unmarshal(post(t, url, "base64"), &b64); err != nil {
				t.Fatalf("base64 answer: %v", err)
			}
			if len(b64.Data) != len(floats.Data) {
				t.Fatalf("got %d base64 vectors, want %d", len(b64.Data), len(floats.Data))
			}
			for i, d := range b64.Data {
				raw, err := base64.StdEncoding.DecodeString(d.Embedding)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, len(raw)/4)
				for j := range got {
					got[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
				}
				if diff := cmp.Diff(floats.Data[i].Embedding, got); diff != "" {
					t.Errorf("vector %d (-float +base64):\n%s", i, diff)
				}
			}
		})
	}
}

// TestSDKErrorsThroughTranslator: a provider refusing the gateway's key is
// a 502 the SDK raises, without the provider's message.
func TestSDKErrorsThroughTranslator(t *testing.T) {
	for _, name := range []string{"openai", "azure", "vllm"} {
		t.Run(name, func(t *testing.T) {
			client, _, _ := startBehindGateway(t, name, "another-key")
			_, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("got %v, want an API error", err)
			}
			const want = "provider prov refused the gateway's credentials"
			if apiErr.StatusCode != http.StatusBadGateway || apiErr.Code != "upstream_auth_error" || apiErr.Message != want {
				t.Errorf("got %d %s %q, want 502 upstream_auth_error %q", apiErr.StatusCode, apiErr.Code, apiErr.Message, want)
			}
		})
	}
}
