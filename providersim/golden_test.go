package providersim_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/providersim"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// TestGoldenWire freezes the exact bytes each simulated provider sends for
// representative requests, headers included, so wire-format changes show
// up in review. Each case runs against a fresh simulator so ids start over.
func TestGoldenWire(t *testing.T) {
	const weather = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"metric":{"type":"boolean"},"unit":{"type":"string","enum":["c","f"]}},"required":["city","days","metric","unit"]}}}]`
	const anTools = `"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	const rsNamespace = `"tools":[{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.","tools":[{"type":"function","name":"spawn_agent","parameters":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]},{"type":"web_search"}]`
	const gmTools = `"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]}}]}]`
	tests := []struct {
		name string
		kind providersim.Kind
		call call
	}{
		{"openai_chat", providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is the capital of Portugal?"}]}`}},
		{"openai_chat_image", providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`}},
		{"openai_chat_max_tokens", providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","max_completion_tokens":3,"messages":[{"role":"user","content":"Tell me a long story"}]}`}},
		{"openai_chat_tool_call", providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather in Oslo?"}],` + weather + `}`}},
		{"openai_chat_tool_result", providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather in Oslo?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"{\"temp_c\":4,\"sky\":\"overcast with light rain all afternoon\"}"}],` + weather + `}`}},
		{"openai_stream", providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Hi"}]}`}},
		{"openai_stream_usage", providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`}},
		{"openai_stream_tool_call", providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Weather in Oslo?"}],` + weather + `}`}},
		{"openai_chat_json_schema", providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather in Oslo?"}],"response_format":{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city","temp_c"],"additionalProperties":false}}}}`}},
		{"openai_embeddings_float", providersim.KindOpenAI, call{path: "/v1/embeddings", body: `{"model":"text-embedding-3-small","input":["alpha","beta"],"dimensions":4}`}},
		{"openai_embeddings_base64", providersim.KindOpenAI, call{path: "/v1/embeddings", body: `{"model":"text-embedding-3-small","input":"alpha","encoding_format":"base64","dimensions":4}`}},
		{"openai_models", providersim.KindOpenAI, call{method: "GET", path: "/v1/models"}},
		{"openai_unknown_path", providersim.KindOpenAI, call{path: "/v1/completions", body: `{}`}},
		{"openai_responses", providersim.KindOpenAI, call{path: "/v1/responses", body: `{"model":"gpt-4o-mini","instructions":"Be brief.","input":"What is the capital of Portugal?","store":false}`}},
		{"openai_responses_stream", providersim.KindOpenAI, call{path: "/v1/responses", body: `{"model":"gpt-4o-mini","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]}]}`}},
		{"openai_responses_stream_namespace_call", providersim.KindOpenAI, call{path: "/v1/responses", body: `{"model":"gpt-4o-mini","stream":true,"input":"Start an agent",` + rsNamespace + `}`}},
		{"openai_responses_tool_result", providersim.KindOpenAI, call{path: "/v1/responses", body: `{"model":"gpt-4o-mini","input":[{"role":"user","content":"Start an agent"},{"type":"function_call","call_id":"call_1","namespace":"multi_agent_v1","name":"spawn_agent","arguments":"{\"message\":\"x\"}"},{"type":"function_call_output","call_id":"call_1","output":"agent a-1 is running"}],` + rsNamespace + `}`}},
		{"openai_responses_web_search", providersim.KindOpenAI, call{path: "/v1/responses", body: `{"model":"gpt-4o-mini","stream":true,"input":"[[web_search]] news","tools":[{"type":"web_search","external_web_access":false}]}`}},
		{"azure_chat", providersim.KindAzureOpenAI, call{path: "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", body: `{"messages":[{"role":"user","content":"Hi"}]}`}},
		{"azure_stream_usage", providersim.KindAzureOpenAI, call{path: "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", body: `{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`}},
		{"azure_embeddings", providersim.KindAzureOpenAI, call{path: "/openai/deployments/embed/embeddings?api-version=2024-10-21", body: `{"input":"alpha","dimensions":2}`}},
		{"azure_missing_api_version", providersim.KindAzureOpenAI, call{path: "/openai/deployments/gpt-4o/chat/completions", body: `{"messages":[{"role":"user","content":"Hi"}]}`}},
		{"azure_bad_api_version", providersim.KindAzureOpenAI, call{path: "/openai/deployments/gpt-4o/chat/completions?api-version=latest", body: `{"messages":[{"role":"user","content":"Hi"}]}`}},
		{"compatible_chat", providersim.KindOpenAICompatible, call{path: "/v1/chat/completions", body: `{"model":"mistral-small","messages":[{"role":"user","content":"Hi"}]}`}},
		{"compatible_stream_usage", providersim.KindOpenAICompatible, call{path: "/v1/chat/completions", body: `{"model":"mistral-small","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`}},
		{"compatible_stream_options_without_stream", providersim.KindOpenAICompatible, call{path: "/v1/chat/completions", body: `{"model":"mistral-small","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`}},
		{"compatible_tool_call", providersim.KindOpenAICompatible, call{path: "/v1/chat/completions", body: `{"model":"mistral-small","messages":[{"role":"user","content":"Weather?"}],` + weather + `}`}},
		{"anthropic_message", providersim.KindAnthropic, call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"claude-sonnet-4-5","max_tokens":256,"system":"Be brief.","messages":[{"role":"user","content":"What is the capital of Portugal?"}]}`}},
		{"anthropic_message_cached", providersim.KindAnthropic, call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"claude-sonnet-4-5","max_tokens":256,"system":[{"type":"text","text":"A long and stable system prompt.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`}},
		{"anthropic_stream_cached_1h", providersim.KindAnthropic, call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,"system":[{"type":"text","text":"A long and stable system prompt, kept for an hour.","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":[{"type":"text","text":"What changed since this morning?","cache_control":{"type":"ephemeral"}}]}]}`}},
		{"anthropic_max_tokens", providersim.KindAnthropic, call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"claude-sonnet-4-5","max_tokens":2,"messages":[{"role":"user","content":"Hi"}]}`}},
		{"anthropic_stream", providersim.KindAnthropic, call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`}},
		{"anthropic_stream_tool_use", providersim.KindAnthropic, call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Weather in Oslo?"}],` + anTools + `}`}},
		{"anthropic_stream_structured_output", providersim.KindAnthropic, call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"claude-sonnet-4-5","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Weather in Oslo?"}],"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city","temp_c"],"additionalProperties":false}}}}`}},
		{"anthropic_tool_result", providersim.KindAnthropic, call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":"Weather in Oslo?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"4 degrees and raining"}]}],` + anTools + `}`}},
		{"gemini_generate", providersim.KindGemini, call{path: "/v1beta/models/gemini-2.5-flash:generateContent", body: `{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"What is the capital of Portugal?"}]}]}`}},
		{"gemini_max_tokens", providersim.KindGemini, call{path: "/v1beta/models/gemini-2.5-flash:generateContent", body: `{"contents":[{"role":"user","parts":[{"text":"Hi"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}],"generationConfig":{"maxOutputTokens":2}}`}},
		{"gemini_function_call", providersim.KindGemini, call{path: "/v1beta/models/gemini-2.5-flash:generateContent", body: `{"contents":[{"role":"user","parts":[{"text":"Weather in Oslo?"}]}],` + gmTools + `}`}},
		{"gemini_function_response", providersim.KindGemini, call{path: "/v1beta/models/gemini-2.5-flash:generateContent", body: `{"contents":[{"role":"user","parts":[{"text":"Weather in Oslo?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"4 degrees and raining"}}}]}],` + gmTools + `}`}},
		{"gemini_json_mode", providersim.KindGemini, call{path: "/v1beta/models/gemini-2.5-flash:generateContent", body: `{"contents":[{"role":"user","parts":[{"text":"Weather in Oslo?"}]}],"generationConfig":{"responseMimeType":"application/json"}}`}},
		{"gemini_stream_sse", providersim.KindGemini, call{path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body: `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`}},
		{"gemini_stream_array", providersim.KindGemini, call{path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent", body: `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`}},
		{"gemini_stream_function_call", providersim.KindGemini, call{path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body: `{"contents":[{"role":"user","parts":[{"text":"Weather?"}]}],` + gmTools + `}`}},
		{"gemini_embed", providersim.KindGemini, call{path: "/v1beta/models/gemini-embedding-001:embedContent", body: `{"content":{"parts":[{"text":"alpha"}]},"outputDimensionality":4}`}},
		{"gemini_batch_embed", providersim.KindGemini, call{path: "/v1beta/models/gemini-embedding-001:batchEmbedContents", body: `{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"alpha"}]},"outputDimensionality":2},{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"beta"}]},"outputDimensionality":2}]}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, _ := startKind(t, tt.kind)
			resp, body := do(t, sim.URL(string(tt.kind)), tt.call)
			got := transcript(resp.StatusCode, resp.Header, body)
			path := filepath.Join("testdata", "golden", tt.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("wire transcript mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// transcript renders a response as status, sorted headers (without the
// ones that change per run) and body.
func transcript(status int, h map[string][]string, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d\n", status)
	keys := make([]string, 0, len(h))
	for k := range h {
		if k != "Date" && k != "Content-Length" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(h[k], ", "))
	}
	b.WriteString("\n")
	b.WriteString(body)
	return b.String()
}
