package anthropic

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
)

// translate runs Request on an OpenAI request body with the test target,
// changed by edit when it is not nil.
func translate(t *testing.T, in string, edit func(*translator.Target)) (*Translator, translator.Upstream, *openaiapi.Error) {
	t.Helper()
	req, perr := openaiapi.ParseChatRequest([]byte(in))
	if perr != nil {
		t.Fatalf("parse %s: %v", in, perr)
	}
	target := testTarget()
	if edit != nil {
		m := *target.Model
		target.Model = &m
		edit(&target)
	}
	tr := New(target)
	up, e := tr.Request(req, []byte(in))
	return tr, up, e
}

// TestRequestRules checks one mapping rule per row: the listed top-level
// fields of the upstream body, where "-" means the field must be absent.
func TestRequestRules(t *testing.T) {
	t.Parallel()
	const user = `"messages":[{"role":"user","content":"Hi"}]`
	const weather = `"tools":[{"type":"function","function":{"name":"get_weather"}}]`
	tests := []struct {
		name  string
		in    string
		model func(*policy.Model)
		want  map[string]string
	}{
		{name: "client max_tokens", in: `{"model":"m",` + user + `,"max_tokens":300}`,
			want: map[string]string{"max_tokens": `300`}},
		{name: "max_completion_tokens wins over max_tokens", in: `{"model":"m",` + user + `,"max_tokens":300,"max_completion_tokens":200}`,
			want: map[string]string{"max_tokens": `200`}},
		{name: "model default when the client sends no cap", in: `{"model":"m",` + user + `}`,
			model: func(m *policy.Model) { m.DefaultMaxTokens = 1000 },
			want:  map[string]string{"max_tokens": `1000`}},
		{name: "fallback when the model has no default", in: `{"model":"m",` + user + `}`,
			model: func(m *policy.Model) { m.DefaultMaxTokens, m.MaxOutputTokens = 0, 0 },
			want:  map[string]string{"max_tokens": `4096`}},
		{name: "client cap clamped to the model maximum", in: `{"model":"m",` + user + `,"max_tokens":10000}`,
			model: func(m *policy.Model) { m.MaxOutputTokens = 8192 },
			want:  map[string]string{"max_tokens": `8192`}},
		{name: "fallback clamped to the model maximum", in: `{"model":"m",` + user + `}`,
			model: func(m *policy.Model) { m.DefaultMaxTokens, m.MaxOutputTokens = 0, 1024 },
			want:  map[string]string{"max_tokens": `1024`}},
		{name: "upstream model name", in: `{"model":"alias",` + user + `}`,
			model: func(m *policy.Model) { m.Upstream = "claude-haiku-4-5" },
			want:  map[string]string{"model": `"claude-haiku-4-5"`}},
		{name: "temperature above 1 clamped", in: `{"model":"m",` + user + `,"temperature":2}`,
			want: map[string]string{"temperature": `1`}},
		{name: "temperature in range kept", in: `{"model":"m",` + user + `,"temperature":0.5,"top_p":0.2}`,
			want: map[string]string{"temperature": `0.5`, "top_p": `0.2`}},
		{name: "no temperature sent", in: `{"model":"m",` + user + `}`,
			want: map[string]string{"temperature": "-", "top_p": "-"}},
		{name: "whitespace-only stops dropped", in: `{"model":"m",` + user + `,"stop":[" ","\n"]}`,
			want: map[string]string{"stop_sequences": "-"}},
		{name: "user becomes metadata.user_id", in: `{"model":"m",` + user + `,"user":"u-1"}`,
			want: map[string]string{"metadata": `{"user_id":"u-1"}`}},
		{name: "harmless parameters dropped", in: `{"model":"m",` + user + `,"seed":1,"frequency_penalty":1,"presence_penalty":1,"reasoning_effort":"high","metadata":{"a":"b"},"n":1,"logprobs":false,"top_logprobs":0}`,
			want: map[string]string{"seed": "-", "frequency_penalty": "-", "presence_penalty": "-", "reasoning_effort": "-", "metadata": "-", "n": "-", "logprobs": "-"}},
		{name: "stream options not forwarded", in: `{"model":"m",` + user + `,"stream":true,"stream_options":{"include_usage":true}}`,
			want: map[string]string{"stream": `true`, "stream_options": "-"}},
		{name: "no stream flag when not streaming", in: `{"model":"m",` + user + `}`,
			want: map[string]string{"stream": "-"}},
		{name: "tool_choice without tools dropped", in: `{"model":"m",` + user + `,"tool_choice":"auto","parallel_tool_calls":false}`,
			want: map[string]string{"tools": "-", "tool_choice": "-"}},
		{name: "tools default to auto", in: `{"model":"m",` + user + `,` + weather + `}`,
			want: map[string]string{"tools": `[{"name":"get_weather","input_schema":{"type":"object","properties":{}}}]`, "tool_choice": `{"type":"auto"}`}},
		{name: "parallel_tool_calls false never on none", in: `{"model":"m",` + user + `,` + weather + `,"tool_choice":"none","parallel_tool_calls":false}`,
			want: map[string]string{"tool_choice": `{"type":"none"}`}},
		{name: "parallel_tool_calls false on required", in: `{"model":"m",` + user + `,` + weather + `,"tool_choice":"required","parallel_tool_calls":false}`,
			want: map[string]string{"tool_choice": `{"type":"any","disable_parallel_tool_use":true}`}},
		{name: "JSON mode with non-callable tools forces the JSON tool", in: `{"model":"m",` + user + `,` + weather + `,"tool_choice":"none","response_format":{"type":"json_object"}}`,
			want: map[string]string{
				"tools":       `[{"name":"get_weather","input_schema":{"type":"object","properties":{}}},{"name":"json_tool_call","description":"Respond with a JSON object.","input_schema":{"type":"object","properties":{}}}]`,
				"tool_choice": `{"type":"tool","name":"json_tool_call","disable_parallel_tool_use":true}`,
			}},
		{name: "JSON mode when a client tool must be called adds nothing", in: `{"model":"m",` + user + `,` + weather + `,"tool_choice":"required","response_format":{"type":"json_object"}}`,
			want: map[string]string{"tools": `[{"name":"get_weather","input_schema":{"type":"object","properties":{}}}]`, "tool_choice": `{"type":"any"}`}},
		{name: "text response format is the default", in: `{"model":"m",` + user + `,"response_format":{"type":"text"}}`,
			want: map[string]string{"tools": "-", "tool_choice": "-"}},
		{name: "json_schema without a schema is JSON mode", in: `{"model":"m",` + user + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`,
			want: map[string]string{"tools": `[{"name":"json_tool_call","description":"Respond with a JSON object that matches the schema.","input_schema":{"type":"object","properties":{}}}]`}},
		{name: "system only gets a placeholder user turn", in: `{"model":"m","messages":[{"role":"system","content":"Say hi."}]}`,
			want: map[string]string{"system": `[{"type":"text","text":"Say hi."}]`, "messages": `[{"role":"user","content":[{"type":"text","text":"."}]}]`}},
		{name: "leading system and developer messages are the system prompt", in: `{"model":"m","messages":[{"role":"developer","content":"a"},{"role":"system","content":[{"type":"text","text":"b"}]},{"role":"user","content":"c"}]}`,
			want: map[string]string{"system": `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, "messages": `[{"role":"user","content":[{"type":"text","text":"c"}]}]`}},
		{name: "a later system message stays in place as marked user text", in: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"system","content":"b"},{"role":"user","content":"c"}]}`,
			want: map[string]string{"system": "-", "messages": `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"\u003csystem-message\u003e\nb\n\u003c/system-message\u003e"},{"type":"text","text":"c"}]}]`}},
		{name: "a blank later system message adds nothing", in: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"developer","content":" "},{"role":"assistant","content":"c"}]}`,
			want: map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":[{"type":"text","text":"b"},{"type":"text","text":"c"}]}]`}},
		{name: "tool results go before a system note that precedes them", in: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"system","content":"n"},{"role":"tool","tool_call_id":"c1","content":"r1"},{"role":"tool","tool_call_id":"c2","content":"r2"}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
			want: map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"f","input":{}},{"type":"tool_use","id":"c2","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"r1"},{"type":"tool_result","tool_use_id":"c2","content":"r2"},{"type":"text","text":"\u003csystem-message\u003e\nn\n\u003c/system-message\u003e"}]}]`}},
		{name: "blank user message dropped and turns merged", in: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"  "},{"role":"user","content":"b"}]}`,
			want: map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`}},
		{name: "assistant refusal kept as text", in: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"refusal":"I can't."},{"role":"user","content":[{"type":"refusal","refusal":"why?"}]}]}`,
			want: map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":[{"type":"text","text":"I can't."}]},{"role":"user","content":[{"type":"text","text":"why?"}]}]`}},
		{name: "whitespace-only prefill dropped", in: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":" \n"}]}`,
			want: map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"a"}]}]`}},
		{name: "empty tool result has no content", in: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":""}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
			want: map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1"}]}]`}},
		{name: "tool result with an image", in: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
			want: map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"image","source":{"type":"url","url":"https://x.test/a.png"}}]}]}]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var edit func(*translator.Target)
			if tt.model != nil {
				edit = func(target *translator.Target) { tt.model(target.Model) }
			}
			_, up, e := translate(t, tt.in, edit)
			if e != nil {
				t.Fatalf("got error %v, want none", e)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(up.Body, &body); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			for field, want := range tt.want {
				got, ok := body[field]
				if want == "-" {
					if ok {
						t.Errorf("%s: got %s, want it absent", field, got)
					}
					continue
				}
				if !ok {
					t.Errorf("%s: absent, want %s", field, want)
					continue
				}
				var g, w any
				_ = json.Unmarshal(got, &g)
				if err := json.Unmarshal([]byte(want), &w); err != nil {
					t.Fatalf("bad want for %s: %v", field, err)
				}
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("%s: got %s, want %s", field, got, want)
				}
			}
		})
	}
}

func TestRequestPathAndHeaders(t *testing.T) {
	t.Parallel()
	const in = `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`
	tests := []struct {
		name     string
		basePath string
		key      string
		wantPath string
		want     translator.Headers
	}{
		{name: "with key", key: "k-1", wantPath: "/v1/messages", want: translator.Headers{
			{Key: "content-type", Value: "application/json"}, {Key: "anthropic-version", Value: "2023-06-01"}, {Key: "x-api-key", Value: "k-1"}}},
		{name: "no key sends no auth header", basePath: "/anthropic", wantPath: "/anthropic/v1/messages", want: translator.Headers{
			{Key: "content-type", Value: "application/json"}, {Key: "anthropic-version", Value: "2023-06-01"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, up, e := translate(t, in, func(target *translator.Target) {
				p := *target.Provider
				p.BasePath = tt.basePath
				target.Provider, target.Key = &p, tt.key
			})
			if e != nil {
				t.Fatalf("got error %v, want none", e)
			}
			if up.Path != tt.wantPath {
				t.Errorf("path: got %q, want %q", up.Path, tt.wantPath)
			}
			if diff := cmp.Diff(tt.want, up.Header); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestRefusals(t *testing.T) {
	t.Parallel()
	const user = `"messages":[{"role":"user","content":"Hi"}]`
	const callF = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":%s}}]}`
	withArgs := func(args string) string {
		return `{"model":"m","messages":[{"role":"user","content":"a"},` + strings.Replace(callF, "%s", args, 1) + `,{"role":"tool","tool_call_id":"c1","content":"r"}],"tools":[{"type":"function","function":{"name":"f"}}]}`
	}
	image := func(url string) string {
		return `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`
	}
	tests := []struct {
		name      string
		in        string
		wantParam string
		wantCode  string
	}{
		{"n above 1", `{"model":"m",` + user + `,"n":2}`, "n", "unsupported_value"},
		{"logprobs", `{"model":"m",` + user + `,"logprobs":true}`, "logprobs", "unsupported_parameter"},
		{"top_logprobs", `{"model":"m",` + user + `,"top_logprobs":3}`, "top_logprobs", "unsupported_parameter"},
		{"logit_bias", `{"model":"m",` + user + `,"logit_bias":{"50256":-100}}`, "logit_bias", "unsupported_parameter"},
		{"input audio", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}]}]}`, "messages[0].content[0]", "unsupported_value"},
		{"image media type", image("data:image/bmp;base64,Qk0="), "messages[0].content[0].image_url.url", "unsupported_value"},
		{"image data URL not base64", image("data:image/png,abc"), "messages[0].content[0].image_url.url", "invalid_value"},
		{"image data URL without data", image("data:image/png;base64,"), "messages[0].content[0].image_url.url", "invalid_value"},
		{"image URL scheme", image("ftp://x.test/a.png"), "messages[0].content[0].image_url.url", "invalid_value"},
		{"image in a system message", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]},{"role":"user","content":"Hi"}]}`, "messages[0].content[0]", "invalid_value"},
		{"file id", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, "messages[0].content[0].file.file_id", "unsupported_value"},
		{"file not a PDF", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:text/csv;base64,YSxi"}}]}]}`, "messages[0].content[0].file.file_data", "unsupported_value"},
		{"arguments not JSON", withArgs(`"{\"a\":"`), "messages[1].tool_calls[0].function.arguments", "invalid_value"},
		{"arguments not an object", withArgs(`"[1,2]"`), "messages[1].tool_calls[0].function.arguments", "invalid_value"},
		{"tool message without a call", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"c9","content":"r"}]}`, "messages[1]", "invalid_value"},
		{"tool message answering another call", `{"model":"m","messages":[{"role":"user","content":"a"},` + strings.Replace(callF, "%s", `"{}"`, 1) + `,{"role":"tool","tool_call_id":"c2","content":"r"}]}`, "messages[2]", "invalid_value"},
		{"tool call left unanswered", `{"model":"m","messages":[{"role":"user","content":"a"},` + strings.Replace(callF, "%s", `"{}"`, 1) + `]}`, "messages[1]", "invalid_value"},
		{"tool_choice names an unknown function", `{"model":"m",` + user + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, "tool_choice", "invalid_value"},
		{"tool_choice required without tools", `{"model":"m",` + user + `,"tool_choice":"required"}`, "tool_choice", "invalid_value"},
		{"reserved tool name", `{"model":"m",` + user + `,"tools":[{"type":"function","function":{"name":"json_tool_call"}}]}`, "tools[0].function.name", "invalid_value"},
		{"tool parameters not an object schema", `{"model":"m",` + user + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"array"}}}]}`, "tools[0].function.parameters", "invalid_value"},
		{"response schema not an object schema", `{"model":"m",` + user + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"array","items":{"type":"string"}}}}}`, "response_format.json_schema.schema", "invalid_value"},
		{"unknown response format", `{"model":"m",` + user + `,"response_format":{"type":"xml"}}`, "response_format.type", "invalid_value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, e := translate(t, tt.in, nil)
			if e == nil {
				t.Fatal("got no error, want a 400")
			}
			if e.Status != http.StatusBadRequest || e.Type != openaiapi.TypeInvalidRequest {
				t.Errorf("got %d %s, want 400 %s", e.Status, e.Type, openaiapi.TypeInvalidRequest)
			}
			if e.Param != tt.wantParam || e.Code != tt.wantCode {
				t.Errorf("got param %q code %q, want param %q code %q", e.Param, e.Code, tt.wantParam, tt.wantCode)
			}
			if strings.Contains(string(e.Body()), testTarget().Key) {
				t.Errorf("error body %s holds the provider key", e.Body())
			}
		})
	}
}

func TestParseDataURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		in                 string
		wantType, wantData string
		wantOK             bool
	}{
		{"png", "data:image/png;base64,AAA=", "image/png", "AAA=", true},
		{"upper case and parameters", "DATA:Image/PNG;charset=x;BASE64,AAA=", "image/png", "AAA=", true},
		{"not base64", "data:image/png,AAA=", "", "", false},
		{"no comma", "data:image/png;base64", "", "", false},
		{"no media type", "data:;base64,AAA=", "", "", false},
		{"not a data URL", "https://x.test/a.png", "", "", false},
		{"too short", "dat", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			typ, data, ok := parseDataURL(tt.in)
			if ok != tt.wantOK || (ok && (typ != tt.wantType || data != tt.wantData)) {
				t.Errorf("got (%q, %q, %v), want (%q, %q, %v)", typ, data, ok, tt.wantType, tt.wantData, tt.wantOK)
			}
		})
	}
}
