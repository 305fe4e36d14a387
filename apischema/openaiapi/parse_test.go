package openaiapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseChatRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		wantCode  string
		wantParam string
	}{
		{"minimal", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "", ""},
		{"parts, tools and a tool round trip", `{"model":"m","messages":[
			{"role":"developer","content":[{"type":"text","text":"be brief"}]},
			{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}]},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"ok"}],
			"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
			"tool_choice":{"type":"function","function":{"name":"f"}},"stop":"END","stream":true,"stream_options":{"include_usage":true}}`, "", ""},
		{"unknown fields are ignored", `{"model":"m","messages":[{"role":"user","content":"hi"}],"x_vendor":{"a":1},"store":true}`, "", ""},
		{"empty body", ``, "invalid_body", ""},
		{"not JSON", `{"model":`, "invalid_json", ""},
		{"JSON array", `[1,2]`, "invalid_type", ""},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, "missing_required_parameter", "model"},
		{"model of the wrong type", `{"model":7,"messages":[]}`, "invalid_type", "model"},
		{"no messages", `{"model":"m","messages":[]}`, "missing_required_parameter", "messages"},
		{"messages not an array", `{"model":"m","messages":"hi"}`, "invalid_type", "messages"},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, "invalid_value", "messages[0]"},
		{"user without content", `{"model":"m","messages":[{"role":"user"}]}`, "invalid_value", "messages[0]"},
		{"content of the wrong type", `{"model":"m","messages":[{"role":"user","content":5}]}`, "invalid_value", ""},
		{"tool without its call id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "invalid_value", "messages[0]"},
		{"image without a URL", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, "invalid_value", "messages[0]"},
		{"temperature too high", `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":3}`, "invalid_value", "temperature"},
		{"zero max tokens", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, "invalid_value", "max_tokens"},
		{"five stop sequences", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b","c","d","e"]}`, "invalid_value", "stop"},
		{"bad tool choice", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"sometimes"}`, "invalid_value", ""},
		{"messages twice", `{"model":"m","messages":[{"role":"user","content":"hi"}],"messages":[{"role":"user","content":"ho"}]}`, "invalid_value", "messages"},
		{"messages and Messages", `{"model":"m","messages":[{"role":"user","content":"hi"}],"Messages":[{"role":"user","content":"ho"}]}`, "invalid_value", "Messages"},
		{"an escaped duplicate", `{"model":"m","messages":[{"role":"user","content":"hi"}],"m\u0065ssages":[]}`, "invalid_value", "messages"},
		{"a Kelvin-sign variant", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_toKens":5,"max_tokens":1}`, "invalid_value", "max_toKens"},
		// Alone, a variant would be the field to the gateway and nothing to
		// a provider.
		{"a case variant alone", `{"model":"m","messages":[{"role":"user","content":"hi"}],"MAX_TOKENS":1}`, "invalid_value", "MAX_TOKENS"},
		{"an unknown member is not a variant", `{"model":"m","messages":[{"role":"user","content":"hi"}],"prediction_v9":{}}`, "", ""},
		{"case variants in a message", `{"model":"m","messages":[{"role":"user","content":"hi","Content":"ho"}]}`, "invalid_value", "Content"},
		{"case variants in a schema are the client's", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"id":{},"ID":{}}}}}]}`, "", ""},
		{"a duplicate in a schema", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","type":"string"}}}]}`, "invalid_value", "type"},
		{"nesting beyond the bound", `{"model":"m","messages":[{"role":"user","content":"hi"}],"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, "invalid_value", ""},
		{"a model name of 257 bytes", `{"model":"` + strings.Repeat("m", 257) + `","messages":[{"role":"user","content":"hi"}]}`, "invalid_value", "model"},
		{"a user of 512 KiB", `{"model":"m","user":"` + strings.Repeat("u", 512<<10) + `","messages":[{"role":"user","content":"hi"}]}`, "invalid_value", "user"},
		{"default service tier", `{"model":"m","messages":[{"role":"user","content":"hi"}],"service_tier":"default"}`, "", ""},
		{"priority service tier", `{"model":"m","messages":[{"role":"user","content":"hi"}],"service_tier":"priority"}`, "invalid_value", "service_tier"},
		{"flex service tier", `{"model":"m","messages":[{"role":"user","content":"hi"}],"service_tier":"flex"}`, "invalid_value", "service_tier"},
		{"the default prompt cache lifetime", `{"model":"m","messages":[{"role":"user","content":"hi"}],"prompt_cache_options":{"ttl":"30m","mode":"explicit"}}`, "", ""},
		{"a longer prompt cache lifetime", `{"model":"m","messages":[{"role":"user","content":"hi"}],"prompt_cache_options":{"ttl":"12h"}}`, "invalid_value", "prompt_cache_options.ttl"},
		{"web search", `{"model":"m","messages":[{"role":"user","content":"hi"}],"web_search_options":{}}`, "invalid_value", "web_search_options"},
		{"audio output", `{"model":"m","messages":[{"role":"user","content":"hi"}],"modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"}}`, "invalid_value", "audio"},
		{"audio null", `{"model":"m","messages":[{"role":"user","content":"hi"}],"audio":null}`, "", ""},
		{"stream options without a stream", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, "invalid_value", "stream_options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseChatRequest([]byte(tt.body))
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if r.Model != "m" {
					t.Errorf("model = %q", r.Model)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want %s", tt.wantCode)
			}
			if err.Status != http.StatusBadRequest || err.Code != tt.wantCode || err.Param != tt.wantParam {
				t.Errorf("got %d %s param %q (%s), want 400 %s param %q", err.Status, err.Code, err.Param, err.Message, tt.wantCode, tt.wantParam)
			}
		})
	}
}

func TestParseEmbeddingsRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		want     EmbeddingInput
		wantCode string
	}{
		{"one string", `{"model":"e","input":"hi"}`, EmbeddingInput{Texts: []string{"hi"}, Single: true}, ""},
		{"strings", `{"model":"e","input":["a","b"]}`, EmbeddingInput{Texts: []string{"a", "b"}}, ""},
		{"one token array", `{"model":"e","input":[1,2,3]}`, EmbeddingInput{Tokens: [][]int{{1, 2, 3}}, Single: true}, ""},
		{"token arrays", `{"model":"e","input":[[1],[2,3]]}`, EmbeddingInput{Tokens: [][]int{{1}, {2, 3}}}, ""},
		{"empty input", `{"model":"e","input":[]}`, EmbeddingInput{}, "invalid_value"},
		{"empty string", `{"model":"e","input":[""]}`, EmbeddingInput{}, "invalid_value"},
		{"bad encoding", `{"model":"e","input":"x","encoding_format":"hex"}`, EmbeddingInput{}, "invalid_value"},
		{"input of the wrong type", `{"model":"e","input":{"a":1}}`, EmbeddingInput{}, "invalid_value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseEmbeddingsRequest([]byte(tt.body))
			if tt.wantCode != "" {
				if err == nil || err.Code != tt.wantCode {
					t.Fatalf("got %v, want %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, r.Input); diff != "" {
				t.Errorf("input (-want +got):\n%s", diff)
			}
			// The input survives a round trip in its own shape.
			b, _ := json.Marshal(r.Input)
			var back EmbeddingInput
			if err := json.Unmarshal(b, &back); err != nil || !cmp.Equal(back, r.Input) {
				t.Errorf("round trip of %s gave %+v (%v)", b, back, err)
			}
		})
	}
}

func FuzzParseChatRequest(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	f.Add(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:x"}}]}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto","stop":["x"],"stream":true,"stream_options":{"include_usage":true}}`)
	f.Add(`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}]}`)
	f.Add(`{"model":`)
	f.Fuzz(func(t *testing.T, body string) {
		r, err := ParseChatRequest([]byte(body))
		if err != nil {
			if r != nil || err.Status != http.StatusBadRequest || !json.Valid(err.Body()) {
				t.Fatalf("refusal %+v with request %v", err, r)
			}
			if strings.Contains(err.Message, body) && len(body) > 40 {
				t.Fatalf("the refusal echoes the body")
			}
			return
		}
		// An accepted request survives a round trip: what the gateway
		// would forward parses to the same request.
		b, merr := json.Marshal(r)
		if merr != nil {
			t.Fatalf("re-encoding an accepted request: %v", merr)
		}
		back, perr := ParseChatRequest(b)
		if perr != nil {
			t.Fatalf("the re-encoded request %s is refused: %v", b, perr)
		}
		if back.Model != r.Model || len(back.Messages) != len(r.Messages) || back.Stream != r.Stream || len(back.Tools) != len(r.Tools) {
			t.Fatalf("round trip changed the request: %+v → %+v", r, back)
		}
		_ = EstimatePromptTokens(r)
	})
}
