package openai

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// sent runs one request through a translator and decodes the body the
// provider gets.
func sent(t *testing.T, ct caseTarget, raw string) (map[string]any, *openaiapi.Error) {
	t.Helper()
	_, up, e := start(t, ct, "", []byte(raw))
	if e != nil {
		return nil, e
	}
	var body map[string]any
	if err := json.Unmarshal(up.Body, &body); err != nil {
		t.Fatalf("provider body is not a JSON object: %v\n%s", err, up.Body)
	}
	return body, nil
}

func TestRequestRules(t *testing.T) {
	t.Parallel()
	const msgs = `"messages":[{"role":"user","content":"Hi"}]`
	openai := caseTarget{Kind: "openai"}
	compat := caseTarget{Kind: "openai_compatible"}
	dialect := func(d string) caseTarget { return caseTarget{Kind: "openai_compatible", Dialect: d} }
	tests := []struct {
		name string
		ct   caseTarget
		raw  string
		// want lists fields the provider must get, with their values.
		want map[string]any
		// absent lists fields the provider must not get.
		absent []string
		// wantParam is the param of the expected refusal.
		wantParam string
	}{
		{"openai renames max_tokens", openai, `{"model":"m",` + msgs + `,"max_tokens":10}`,
			map[string]any{"max_completion_tokens": 10.0}, []string{"max_tokens"}, ""},
		{"max_completion_tokens wins over max_tokens", openai, `{"model":"m",` + msgs + `,"max_tokens":10,"max_completion_tokens":20}`,
			map[string]any{"max_completion_tokens": 20.0}, []string{"max_tokens"}, ""},
		{"cap clamped to the model's maximum", openai, `{"model":"m",` + msgs + `,"max_completion_tokens":999999}`,
			map[string]any{"max_completion_tokens": 16384.0}, nil, ""},
		{"the model's default cap is sent when the client sent none", openai, `{"model":"m",` + msgs + `}`,
			map[string]any{"max_completion_tokens": 1024.0}, []string{"max_tokens"}, ""},
		{"a compatible server gets the default cap as max_tokens", compat, `{"model":"m",` + msgs + `}`,
			map[string]any{"max_tokens": 1024.0}, []string{"max_completion_tokens"}, ""},
		{"azure dated before 2024-09-01 uses max_tokens", caseTarget{Kind: "azure_openai", APIVersion: "2024-08-01-preview"}, `{"model":"m",` + msgs + `,"max_completion_tokens":5}`,
			map[string]any{"max_tokens": 5.0}, []string{"max_completion_tokens"}, ""},
		{"azure dated before 2024-09-01 gets no stream_options", caseTarget{Kind: "azure_openai", APIVersion: "2024-06-01"}, `{"model":"m",` + msgs + `,"stream":true,"stream_options":{"include_usage":true}}`,
			map[string]any{"stream": true}, []string{"stream_options"}, ""},
		{"azure current uses max_completion_tokens", caseTarget{Kind: "azure_openai", APIVersion: "2025-04-01-preview"}, `{"model":"m",` + msgs + `,"max_tokens":5}`,
			map[string]any{"max_completion_tokens": 5.0}, []string{"max_tokens"}, ""},
		{"azure undated uses max_completion_tokens", caseTarget{Kind: "azure_openai", APIVersion: "preview"}, `{"model":"m",` + msgs + `,"max_tokens":5}`,
			map[string]any{"max_completion_tokens": 5.0}, nil, ""},
		{"compatible uses max_tokens", compat, `{"model":"m",` + msgs + `,"max_completion_tokens":7}`,
			map[string]any{"max_tokens": 7.0}, []string{"max_completion_tokens"}, ""},
		{"model is the upstream name", openai, `{"model":"m",` + msgs + `}`,
			map[string]any{"model": "upstream-model"}, nil, ""},
		{"unknown fields reach OpenAI", openai, `{"model":"m",` + msgs + `,"prediction":{"type":"content","content":"x"},"verbosity":"low"}`,
			map[string]any{"prediction": map[string]any{"type": "content", "content": "x"}, "verbosity": "low"}, nil, ""},
		{"stream asks for usage", openai, `{"model":"m",` + msgs + `,"stream":true}`,
			map[string]any{"stream_options": map[string]any{"include_usage": true}}, nil, ""},
		{"no stream_options without stream", compat, `{"model":"m",` + msgs + `,"stream":false}`,
			nil, []string{"stream_options"}, ""},
		{"developer becomes system for compatible servers", compat, `{"model":"m","messages":[{"role":"developer","content":"Be brief."},{"role":"user","content":"Hi"}]}`,
			map[string]any{"messages": []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "Hi"}}}, nil, ""},
		{"developer stays for OpenAI", openai, `{"model":"m","messages":[{"role":"developer","content":"Be brief."}]}`,
			map[string]any{"messages": []any{map[string]any{"role": "developer", "content": "Be brief."}}}, nil, ""},

		{"mistral seed is random_seed", dialect("mistral"), `{"model":"m",` + msgs + `,"seed":9,"random_seed":1}`,
			map[string]any{"random_seed": 9.0}, []string{"seed"}, ""},
		{"mistral never gets stream_options", dialect("mistral"), `{"model":"m",` + msgs + `,"stream":true,"stream_options":{"include_usage":true}}`,
			map[string]any{"stream": true}, []string{"stream_options"}, ""},
		{"mistral drops hints", dialect("mistral"), `{"model":"m",` + msgs + `,"user":"u","store":true,"service_tier":"auto","reasoning_effort":"low","logprobs":false}`,
			nil, []string{"user", "store", "service_tier", "reasoning_effort", "logprobs"}, ""},
		{"mistral keeps its own fields", dialect("mistral"), `{"model":"m",` + msgs + `,"safe_prompt":true,"n":2}`,
			map[string]any{"safe_prompt": true, "n": 2.0}, nil, ""},
		{"mistral refuses logit_bias", dialect("mistral"), `{"model":"m",` + msgs + `,"logit_bias":{"50256":-100}}`, nil, nil, "logit_bias"},
		{"mistral refuses audio output", dialect("mistral"), `{"model":"m",` + msgs + `,"modalities":["text","audio"]}`, nil, nil, "modalities"},

		{"ollama drops n of 1 and empty logit_bias", dialect("ollama"), `{"model":"m",` + msgs + `,"n":1,"logit_bias":{},"logprobs":false,"top_logprobs":null,"user":"u"}`,
			nil, []string{"n", "logit_bias", "logprobs", "top_logprobs", "user"}, ""},
		{"ollama refuses logprobs", dialect("ollama"), `{"model":"m",` + msgs + `,"logprobs":true}`, nil, nil, "logprobs"},
		{"ollama refuses top_logprobs", dialect("ollama"), `{"model":"m",` + msgs + `,"top_logprobs":2}`, nil, nil, "top_logprobs"},
		{"ollama refuses logit_bias", dialect("ollama"), `{"model":"m",` + msgs + `,"logit_bias":{"1":5}}`, nil, nil, "logit_bias"},
		{"ollama refuses n above 1", dialect("ollama"), `{"model":"m",` + msgs + `,"n":2}`, nil, nil, "n"},
		{"ollama drops tool_choice auto", dialect("ollama"), `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"}`,
			map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f"}}}}, []string{"tool_choice"}, ""},
		{"ollama tool_choice none drops the tools", dialect("ollama"), `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`,
			nil, []string{"tools", "tool_choice"}, ""},
		{"ollama refuses a named tool_choice", dialect("ollama"), `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
			nil, nil, "tool_choice"},
		{"ollama refuses http images", dialect("ollama"), `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]}`,
			nil, nil, "messages[1].content[0].image_url.url"},
		{"ollama takes data URL images", dialect("ollama"), `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`,
			map[string]any{"model": "upstream-model"}, nil, ""},

		{"groq refuses logprobs", dialect("groq"), `{"model":"m",` + msgs + `,"logprobs":true}`, nil, nil, "logprobs"},
		{"groq refuses n above 1", dialect("groq"), `{"model":"m",` + msgs + `,"n":4}`, nil, nil, "n"},
		{"groq drops message names", dialect("groq"), `{"model":"m","messages":[{"role":"user","name":"ana","content":"Hi"}]}`,
			map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Hi"}}}, nil, ""},
		{"deepseek refuses n above 1", dialect("deepseek"), `{"model":"m",` + msgs + `,"n":2}`, nil, nil, "n"},
		{"deepseek passes logprobs", dialect("deepseek"), `{"model":"m",` + msgs + `,"logprobs":true}`,
			map[string]any{"logprobs": true}, nil, ""},
		{"vllm passes its sampling fields", dialect("vllm"), `{"model":"m",` + msgs + `,"top_k":20,"min_p":0.05}`,
			map[string]any{"top_k": 20.0, "min_p": 0.05}, nil, ""},
		{"dialect ignored for OpenAI", caseTarget{Kind: "openai", Dialect: "mistral"}, `{"model":"m",` + msgs + `,"seed":3,"user":"u"}`,
			map[string]any{"seed": 3.0, "user": "u"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, e := sent(t, tt.ct, tt.raw)
			if tt.wantParam != "" {
				if e == nil {
					t.Fatalf("got no refusal, want a 400 naming %q", tt.wantParam)
				}
				if e.Status != 400 || e.Param != tt.wantParam || e.Code != "unsupported_parameter" {
					t.Fatalf("got %d %s param %q, want 400 unsupported_parameter param %q", e.Status, e.Code, e.Param, tt.wantParam)
				}
				return
			}
			if e != nil {
				t.Fatalf("got refusal %v, want none", e)
			}
			for k, want := range tt.want {
				if diff := cmp.Diff(want, body[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
			for _, k := range tt.absent {
				if v, ok := body[k]; ok {
					t.Errorf("got %s = %v, want it absent", k, v)
				}
			}
		})
	}
}

func TestMistralToolIDs(t *testing.T) {
	t.Parallel()
	raw := `{"model":"m","messages":[{"role":"user","content":"q"},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_Vb81kQzP3xRm2Lw9","type":"function","function":{"name":"f","arguments":"{}"}},
			{"id":"call_\u00e9t\u00e9","type":"function","function":{"name":"f","arguments":"{}"}},
			{"id":"abcDEF123","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_\u00e9t\u00e9","content":"2"},
		{"role":"tool","tool_call_id":"abcDEF123","content":"3"},
		{"role":"tool","tool_call_id":"call_Vb81kQzP3xRm2Lw9","content":"1"}]}`
	short := regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
	ids := func() ([]string, []string, *Translator) {
		tr, up, e := start(t, caseTarget{Kind: "openai_compatible", Dialect: "mistral"}, "", []byte(raw))
		if e != nil {
			t.Fatal(e)
		}
		var body struct {
			Messages []struct {
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(up.Body, &body); err != nil {
			t.Fatal(err)
		}
		var calls, results []string
		for _, tc := range body.Messages[1].ToolCalls {
			calls = append(calls, tc.ID)
		}
		for _, m := range body.Messages[2:] {
			results = append(results, m.ToolCallID)
		}
		return calls, results, tr
	}
	calls, results, tr := ids()
	for _, id := range append(calls, results...) {
		if !short.MatchString(id) {
			t.Errorf("got id %q, want nine alphanumerics", id)
		}
	}
	if calls[2] != "abcDEF123" {
		t.Errorf("got %q for an id already in Mistral's form, want it kept", calls[2])
	}
	if diff := cmp.Diff([]string{calls[1], calls[2], calls[0]}, results); diff != "" {
		t.Errorf("tool messages do not name their calls' new ids (-want +got):\n%s", diff)
	}
	if calls[0] == calls[1] {
		t.Errorf("got the same short id %q for two calls", calls[0])
	}
	again, _, _ := ids()
	if diff := cmp.Diff(calls, again); diff != "" {
		t.Errorf("ids differ between turns (-first +second):\n%s", diff)
	}
	if got := tr.idBack[calls[1]]; got != "call_été" {
		t.Errorf("got %q mapped back, want the client's id call_été", got)
	}
}

func TestRequestRefusesBadBody(t *testing.T) {
	t.Parallel()
	tr := New(target(caseTarget{}))
	req := &openaiapi.ChatRequest{Model: "m", Messages: []openaiapi.Message{{Role: "user", Content: openaiapi.Content{Text: "x"}}}}
	for _, raw := range []string{``, `[]`, `{"model":"m",`, `{"model" "m"}`} {
		if _, e := tr.Request(req, []byte(raw)); e == nil || e.Status != 400 {
			t.Errorf("body %q: got %v, want a 400", raw, e)
		}
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		ct       caseTarget
		op       string
		wantPath string
		wantAuth [2]string
	}{
		{"openai chat", caseTarget{Kind: "openai"}, "chat/completions", "/v1/chat/completions", [2]string{"authorization", "Bearer " + testKey}},
		{"compatible with base path", caseTarget{Kind: "openai_compatible", BasePath: "/openai"}, "embeddings", "/openai/v1/embeddings", [2]string{"authorization", "Bearer " + testKey}},
		{"azure deployment", caseTarget{Kind: "azure_openai", APIVersion: "2024-10-21", Upstream: "my deploy"}, "embeddings",
			"/openai/deployments/my%20deploy/embeddings?api-version=2024-10-21", [2]string{"api-key", testKey}},
		{"no key, no auth", caseTarget{Kind: "openai", NoKey: true}, "chat/completions", "/v1/chat/completions", [2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path, h := NewWithDialect(target(tt.ct), "").endpoint(tt.op)
			if path != tt.wantPath {
				t.Errorf("got path %q, want %q", path, tt.wantPath)
			}
			var auth [2]string
			for _, kv := range h {
				if kv.Key == "authorization" || kv.Key == "api-key" {
					auth = [2]string{kv.Key, kv.Value}
				}
			}
			if auth != tt.wantAuth {
				t.Errorf("got auth %v, want %v", auth, tt.wantAuth)
			}
			if h.Get("accept-encoding") != "identity" {
				t.Errorf("got accept-encoding %q, want identity", h.Get("accept-encoding"))
			}
		})
	}
}

func TestDialects(t *testing.T) {
	t.Parallel()
	for _, d := range Dialects() {
		if !d.Known() {
			t.Errorf("got %q unknown, want every listed dialect known", d)
		}
	}
	if Dialect("llamacpp").Known() {
		t.Errorf("got llamacpp known, want unknown")
	}
}
