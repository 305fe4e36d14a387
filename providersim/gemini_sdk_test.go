package providersim_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/switchyard/switchyard/providersim"
)

// generateOutcome is what a test asserts about one Gemini response.
type generateOutcome struct {
	Model      string
	Text       string
	Finish     genai.FinishReason
	CallName   string
	CallArgs   map[string]any
	Prompt     int32
	Candidates int32
	Total      int32
}

func generateOutcomeOf(r *genai.GenerateContentResponse) generateOutcome {
	o := generateOutcome{Model: r.ModelVersion, Text: r.Text()}
	if len(r.Candidates) > 0 {
		o.Finish = r.Candidates[0].FinishReason
	}
	if calls := r.FunctionCalls(); len(calls) > 0 {
		o.CallName, o.CallArgs = calls[0].Name, calls[0].Args
	}
	if u := r.UsageMetadata; u != nil {
		o.Prompt, o.Candidates, o.Total = u.PromptTokenCount, u.CandidatesTokenCount, u.TotalTokenCount
	}
	return o
}

func newGenaiClient(t *testing.T, baseURL, key string) *genai.Client {
	t.Helper()
	client, err := genai.NewClient(t.Context(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: baseURL + "/"},
	})
	if err != nil {
		t.Fatalf("genai.NewClient: %v", err)
	}
	return client
}

func TestGeminiSDK(t *testing.T) {
	sim, _ := startSim(t, providersim.ProviderConfig{Kind: providersim.KindGemini, ExpectKey: "gm-key"})
	client := newGenaiClient(t, sim.URL("gemini"), "gm-key")
	const model = "gemini-2.5-flash"
	tools := []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
		{Name: "get_weather", Parameters: &genai.Schema{
			Type:       genai.TypeObject,
			Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString}, "days": {Type: genai.TypeInteger}},
			Required:   []string{"city", "days"},
		}},
		{Name: "get_time", Parameters: &genai.Schema{
			Type:       genai.TypeObject,
			Properties: map[string]*genai.Schema{"zone": {Type: genai.TypeString}},
			Required:   []string{"zone"},
		}},
	}}}
	hi := genai.Text("Hi there")
	tests := []struct {
		name     string
		contents []*genai.Content
		config   *genai.GenerateContentConfig
		want     generateOutcome
	}{
		{
			name:     "text",
			contents: hi,
			want:     generateOutcome{Text: "Hello from gemini-2.5-flash: Hi there", Finish: genai.FinishReasonStop, Prompt: 5, Candidates: 5, Total: 10},
		},
		{
			name:     "max output tokens truncate",
			contents: hi,
			config:   &genai.GenerateContentConfig{MaxOutputTokens: 2},
			want:     generateOutcome{Text: "Hello from", Finish: genai.FinishReasonMaxTokens, Prompt: 5, Candidates: 2, Total: 7},
		},
		{
			name: "image",
			contents: []*genai.Content{genai.NewContentFromParts([]*genai.Part{
				genai.NewPartFromText("What is this?"), genai.NewPartFromBytes([]byte{0x89, 'P', 'N', 'G'}, "image/png"),
			}, genai.RoleUser)},
			want: generateOutcome{Text: "Hello from gemini-2.5-flash: What is this? [1 image]", Finish: genai.FinishReasonStop, Prompt: 7, Candidates: 8, Total: 15},
		},
		{
			name:     "function call",
			contents: hi,
			config:   &genai.GenerateContentConfig{Tools: tools},
			want:     generateOutcome{Finish: genai.FinishReasonStop, CallName: "get_weather", CallArgs: map[string]any{"city": "x", "days": float64(1)}, Prompt: 5, Candidates: 8, Total: 13},
		},
		{
			name:     "forced function",
			contents: hi,
			config: &genai.GenerateContentConfig{Tools: tools, ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
				Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"get_time"},
			}}},
			want: generateOutcome{Finish: genai.FinishReasonStop, CallName: "get_time", CallArgs: map[string]any{"zone": "x"}, Prompt: 5, Candidates: 5, Total: 10},
		},
		{
			name:     "function calling off",
			contents: hi,
			config: &genai.GenerateContentConfig{Tools: tools, ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
				Mode: genai.FunctionCallingConfigModeNone,
			}}},
			want: generateOutcome{Text: "Hello from gemini-2.5-flash: Hi there", Finish: genai.FinishReasonStop, Prompt: 5, Candidates: 5, Total: 10},
		},
		{
			name: "function response",
			contents: []*genai.Content{
				genai.NewContentFromText("Hi there", genai.RoleUser),
				genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionCall("get_weather", map[string]any{"city": "Oslo", "days": 1})}, genai.RoleModel),
				genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionResponse("get_weather", map[string]any{"output": "sunny"})}, genai.RoleUser),
			},
			config: &genai.GenerateContentConfig{Tools: tools},
			want:   generateOutcome{Text: "Tool result received: sunny", Finish: genai.FinishReasonStop, Prompt: 13, Candidates: 4, Total: 17},
		},
	}
	for _, tt := range tests {
		tt.want.Model = model
		t.Run(tt.name, func(t *testing.T) {
			got, err := client.Models.GenerateContent(t.Context(), model, tt.contents, tt.config)
			if err != nil {
				t.Fatalf("GenerateContent: %v", err)
			}
			if diff := cmp.Diff(tt.want, generateOutcomeOf(got)); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
		})
		t.Run(tt.name+"/stream", func(t *testing.T) {
			var got generateOutcome
			var prevCandidates int32
			chunks := 0
			for resp, err := range client.Models.GenerateContentStream(t.Context(), model, tt.contents, tt.config) {
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				chunks++
				o := generateOutcomeOf(resp)
				if o.Candidates < prevCandidates {
					t.Errorf("chunk %d: candidatesTokenCount fell from %d to %d; want running totals", chunks, prevCandidates, o.Candidates)
				}
				prevCandidates = o.Candidates
				// Text accumulates; everything else is the latest value.
				o.Text = got.Text + o.Text
				if o.CallName == "" {
					o.CallName, o.CallArgs = got.CallName, got.CallArgs
				}
				got = o
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("accumulated stream mismatch (-want +got):\n%s", diff)
			}
			if tt.want.CallName == "" && chunks < 2 {
				t.Errorf("got %d chunks, want text split over several", chunks)
			}
		})
	}
	t.Run("embeddings", func(t *testing.T) {
		dims := int32(5)
		got, err := client.Models.EmbedContent(t.Context(), "gemini-embedding-001",
			[]*genai.Content{genai.NewContentFromText("alpha", genai.RoleUser), genai.NewContentFromText("beta", genai.RoleUser)},
			&genai.EmbedContentConfig{OutputDimensionality: &dims})
		if err != nil {
			t.Fatalf("EmbedContent: %v", err)
		}
		if len(got.Embeddings) != 2 || len(got.Embeddings[0].Values) != 5 || cmp.Equal(got.Embeddings[0].Values, got.Embeddings[1].Values) {
			t.Errorf("got %v, want two different 5-dimensional embeddings", got.Embeddings)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		bad := newGenaiClient(t, sim.URL("gemini"), "nope")
		_, err := bad.Models.GenerateContent(t.Context(), model, hi, nil)
		var apiErr genai.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != 400 || apiErr.Status != "INVALID_ARGUMENT" || len(apiErr.Details) == 0 || apiErr.Details[0]["reason"] != "API_KEY_INVALID" {
			t.Errorf("got %v, want 400 INVALID_ARGUMENT with reason API_KEY_INVALID", err)
		}
	})
}

// TestGeminiSDKCountTokens: the simulator's models.countTokens answers the
// official SDK, and counts a prompt as generateContent's usage does.
func TestGeminiSDKCountTokens(t *testing.T) {
	const model = "gemini-2.5-flash"
	sim, _ := startSim(t, providersim.ProviderConfig{Kind: providersim.KindGemini, ExpectKey: "gm-key", Models: []string{model}})
	client := newGenaiClient(t, sim.URL("gemini"), "gm-key")
	got, err := client.Models.CountTokens(t.Context(), model, genai.Text("Hi there"), nil)
	if err != nil {
		t.Fatalf("CountTokens: %v", err)
	}
	if gen, err := client.Models.GenerateContent(t.Context(), model, genai.Text("Hi there"), nil); err != nil || got.TotalTokens != gen.UsageMetadata.PromptTokenCount {
		t.Errorf("counted %d tokens, generateContent's prompt had %v (%v)", got.TotalTokens, gen, err)
	}
	_, err = client.Models.CountTokens(t.Context(), "gemini-9", genai.Text("Hi there"), nil)
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 404 {
		t.Errorf("an unknown model: %v, want a 404", err)
	}
}
