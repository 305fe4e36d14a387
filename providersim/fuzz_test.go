package providersim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fuzzTargets are the request parsers of every kind, by endpoint.
var fuzzTargets = []struct {
	kind Kind
	path string
}{
	{KindOpenAI, "/v1/chat/completions"},
	{KindOpenAI, "/v1/embeddings"},
	{KindOpenAI, "/v1/responses"},
	{KindAzureOpenAI, "/openai/deployments/d/chat/completions?api-version=2024-10-21"},
	{KindOpenAICompatible, "/v1/chat/completions"},
	{KindAnthropic, "/v1/messages"},
	{KindGemini, "/v1beta/models/g:generateContent"},
	{KindGemini, "/v1beta/models/g:streamGenerateContent?alt=sse"},
	{KindGemini, "/v1beta/models/g:streamGenerateContent"},
	{KindGemini, "/v1beta/models/g:batchEmbedContents"},
}

// FuzzRequest feeds arbitrary bodies to every endpoint. Whatever arrives,
// the simulator must answer without panicking, with a 200 or a 4xx, and
// with JSON a client can parse (inside SSE events for streams).
func FuzzRequest(f *testing.F) {
	seeds := []string{
		`{"model":"m","messages":[{"role":"user","content":"Hi"}]}`,
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"image_url","image_url":{"url":"x"}}]}],"tools":[{"type":"function","function":{"name":"t","parameters":{"properties":{"a":{"type":"string"}},"required":["a"]}}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"t","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"max_tokens":2}`,
		`{"model":"e","input":["a","b"],"encoding_format":"base64","dimensions":3}`,
		`{"model":"c","max_tokens":5,"stream":true,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"Hi"}],"tools":[{"name":"t","input_schema":{"required":["q"]}}]}`,
		`{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use","id":"u","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":"r"}]}],"tools":[{"name":"t"}]}`,
		`{"contents":[{"role":"user","parts":[{"text":"Hi"},{"inlineData":{"mimeType":"image/png","data":"AA=="}}]}],"generationConfig":{"maxOutputTokens":3}}`,
		`{"contents":[{"parts":[{"text":"Hi"}]},{"role":"model","parts":[{"functionCall":{"name":"t","args":{}}}]},{"parts":[{"functionResponse":{"name":"t","response":{"output":"r"}}}]}],"tools":[{"functionDeclarations":[{"name":"t"}]}]}`,
		`{"requests":[{"model":"models/g","content":{"parts":[{"text":"a"}]}}]}`,
		`{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"$ref":"#/$defs/a","$defs":{"a":{"required":["b"],"properties":{"b":{"anyOf":[{"$ref":"#"}]}}}}}}},"messages":[{"role":"user","content":"[[call t {\"a\":1}]] use the t tool"}],"tools":[{"type":"function","function":{"name":"t"}}]}`,
		`{"model":"c","max_tokens":5,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}},"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>[[call t]]"}]},{"role":"system","content":"s"}],"tools":[{"name":"t"}]}`,
		`{"contents":[{"parts":[{"text":"[[call t]]"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"ARRAY"}},"tools":[{"functionDeclarations":[{"name":"t"}]}]}`,
		`{"model":"m","stream":true,"instructions":"s","max_output_tokens":16,"input":[{"role":"developer","content":[{"type":"input_text","text":"d"}]},{"role":"user","content":"[[web_search]] Hi"},{"type":"function_call","call_id":"c","namespace":"n","name":"t","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}],"tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"t","parameters":{"required":["a"]}}]},{"type":"web_search"}],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[]}}`,
		`{"messages":null}`, `[]`, `{`, ``,
	}
	for i := range 2 * len(fuzzTargets) {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	e := &env{
		now:   func() time.Time { return time.Unix(1_700_000_000, 0) },
		sleep: func(context.Context, time.Duration) error { return nil },
		log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	// Each target runs unscripted and scripted.
	providers := make([][2]*provider, len(fuzzTargets))
	for i, ft := range fuzzTargets {
		providers[i] = [2]*provider{
			newProvider(ProviderConfig{Name: "p", Kind: ft.kind}, e),
			newProvider(ProviderConfig{Name: "p", Kind: ft.kind, Script: true}, e),
		}
	}
	f.Fuzz(func(t *testing.T, target uint8, body []byte) {
		i := int(target) % len(fuzzTargets)
		req := httptest.NewRequest(http.MethodPost, fuzzTargets[i].path, bytes.NewReader(body))
		req.Header.Set("anthropic-version", "2023-06-01")
		rec := httptest.NewRecorder()
		providers[i][int(target)/len(fuzzTargets)%2].ServeHTTP(rec, req)
		got := rec.Body.String()
		if rec.Code != http.StatusOK && (rec.Code < 400 || rec.Code >= 500) {
			t.Fatalf("got status %d, want 200 or 4xx; body %s", rec.Code, got)
		}
		if rec.Header().Get("Content-Type") != "text/event-stream" {
			// Gemini's array stream is JSON as a whole.
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("status %d: body is not JSON: %s", rec.Code, got)
			}
			return
		}
		for _, line := range strings.Split(got, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if ok && data != "[DONE]" && !json.Valid([]byte(data)) {
				t.Fatalf("SSE data is not JSON: %s", data)
			}
		}
	})
}
