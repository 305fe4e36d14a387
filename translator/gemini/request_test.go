package gemini

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// translate runs a client body through the parser and Request.
func translate(t *testing.T, body string) (*generateRequest, *openaiapi.Error) {
	t.Helper()
	req, e := openaiapi.ParseChatRequest([]byte(body))
	if e != nil {
		t.Fatalf("the test body is not a valid chat request: %v", e)
	}
	up, e := New(testTarget()).Request(req, []byte(body))
	if e != nil {
		return nil, e
	}
	var g generateRequest
	if err := json.Unmarshal(up.Body, &g); err != nil {
		t.Fatalf("upstream body: %v", err)
	}
	return &g, nil
}

const userHi = `"messages":[{"role":"user","content":"Hi"}]`

func TestRequestRefusals(t *testing.T) {
	t.Parallel()
	weather := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	withParams := func(params string) string {
		return `{"model":"m",` + userHi + `,"tools":[{"type":"function","function":{"name":"f","parameters":` + params + `}}]}`
	}
	tests := []struct {
		name      string
		body      string
		wantParam string
	}{
		{"n above one", `{"model":"m",` + userHi + `,"n":2}`, "n"},
		{"logprobs", `{"model":"m",` + userHi + `,"logprobs":true}`, "logprobs"},
		{"top_logprobs", `{"model":"m",` + userHi + `,"logprobs":false,"top_logprobs":3}`, "top_logprobs"},
		{"logit_bias", `{"model":"m",` + userHi + `,"logit_bias":{"50256":-100}}`, "logit_bias"},
		{"seed beyond 32 bits", `{"model":"m",` + userHi + `,"seed":4294967296}`, "seed"},
		{"deprecated functions", `{"model":"m",` + userHi + `,"functions":[{"name":"f"}]}`, "functions"},
		{"deprecated function_call", `{"model":"m",` + userHi + `,"function_call":"auto"}`, "function_call"},
		{"audio output", `{"model":"m",` + userHi + `,"modalities":["text","audio"]}`, "modalities"},
		{"audio modality", `{"model":"m",` + userHi + `,"modalities":["text","audio"]}`, "modalities"},
		{"prediction", `{"model":"m",` + userHi + `,"prediction":{"type":"content","content":"x"}}`, "prediction"},
		{"unknown response_format", `{"model":"m",` + userHi + `,"response_format":{"type":"grammar"}}`, "response_format.type"},
		{"only a system message", `{"model":"m","messages":[{"role":"system","content":"Be brief."}]}`, "messages"},
		{"image in a system message", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]},{"role":"user","content":"Hi"}]}`, "messages[0].content[0]"},
		{"image in a later system message", `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"developer","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]}]}`, "messages[1].content[0]"},
		{"image url without extension", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://img.example.net/render?id=7"}}]}]}`, "messages[0].content[0]"},
		{"image url of another scheme", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://img.example.net/a.png"}}]}]}`, "messages[0].content[0]"},
		{"data url not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/svg+xml,<svg/>"}}]}]}`, "messages[0].content[0]"},
		{"data url without type", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:;base64,AAAA"}}]}]}`, "messages[0].content[0]"},
		{"audio format", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"flac"}}]}]}`, "messages[0].content[0]"},
		{"file by id", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, "messages[0].content[0]"},
		{"refusal part from the user", `{"model":"m","messages":[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]}`, "messages[0].content[0]"},
		{"image in an assistant message", `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://x.test/a.png"}}]}]}`, "messages[1].content[0]"},
		{"tool result before its call", `{"model":"m","messages":[{"role":"tool","tool_call_id":"call_1","content":"x"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_call_id"},
		{"arguments not JSON", `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{city: Oslo"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{"arguments not an object", `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1,2]"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{"function name starting with a digit", `{"model":"m",` + userHi + `,"tools":[{"type":"function","function":{"name":"3d_render"}}]}`, "tools[0].function.name"},
		{"tool_choice names an unknown function", `{"model":"m",` + userHi + `,` + weather + `,"tool_choice":{"type":"function","function":{"name":"get_time"}}}`, "tool_choice"},
		{"tool_choice required without tools", `{"model":"m",` + userHi + `,"tool_choice":"required"}`, "tool_choice"},
		{"parameters of type string", withParams(`{"type":"string"}`), "tools[0].function.parameters"},
		{"parameters not an object", withParams(`[1]`), "tools[0].function.parameters"},
		{"remote $ref", withParams(`{"type":"object","properties":{"a":{"$ref":"https://example.net/schema.json"}}}`), "tools[0].function.parameters"},
		{"type null alone", withParams(`{"type":"object","properties":{"a":{"type":"null"}}}`), "tools[0].function.parameters"},
		{"allOf of two types", withParams(`{"type":"object","properties":{"a":{"allOf":[{"type":"string"},{"type":"integer"}]}}}`), "tools[0].function.parameters"},
		{"false schema", withParams(`{"type":"object","properties":{"a":false}}`), "tools[0].function.parameters"},
		{"$refs that double 18 times", withParams(doublingRefs(18)), "tools[0].function.parameters"},
		{"$refs that double 30 times", withParams(doublingRefs(30)), "tools[0].function.parameters"},
		{"a large definition inlined often", withParams(wideRefs(400, 4096)), "tools[0].function.parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, e := translate(t, tt.body)
			if e == nil {
				t.Fatalf("got no refusal, want a 400 naming %q", tt.wantParam)
			}
			if e.Status != http.StatusBadRequest || e.Type != openaiapi.TypeInvalidRequest || e.Param != tt.wantParam {
				t.Errorf("got %d %s param %q (%s), want 400 invalid_request_error param %q", e.Status, e.Type, e.Param, e.Message, tt.wantParam)
			}
		})
	}
}

// doublingRefs is a schema of a few KB whose definitions d0…d(levels-1)
// each hold two properties that $ref the next: inlined, 2^levels nodes.
func doublingRefs(levels int) string {
	var defs []string
	for i := range levels {
		next := `{"type":"string"}`
		if i < levels-1 {
			next = fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, i+1)
		}
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object","properties":{"a":%s,"b":%s}}`, i, next, next))
	}
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"properties":{"root":{"$ref":"#/$defs/d0"}}}`
}

// wideRefs refers to one definition of about size bytes from n properties:
// few nodes, but n copies of its text upstream.
func wideRefs(n, size int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"$ref":"#/$defs/big"}`, i)
	}
	return `{"type":"object","$defs":{"big":{"type":"string","description":"` + strings.Repeat("x", size) + `"}},"properties":{` + strings.Join(props, ",") + `}}`
}

// TestSchemaBudgetIsPerRequest: tools that each stay within the bound
// refuse together once they pass it, so a request cannot multiply the bound
// by its number of tools.
func TestSchemaBudgetIsPerRequest(t *testing.T) {
	t.Parallel()
	tool := `{"type":"function","function":{"name":"f%d","parameters":` + doublingRefs(12) + `}}`
	var tools []string
	for i := range 8 {
		tools = append(tools, fmt.Sprintf(tool, i))
	}
	if _, e := translate(t, `{"model":"m",`+userHi+`,"tools":[`+tools[0]+`]}`); e != nil {
		t.Fatalf("one tool of 2^12 nodes refused: %v", e.Message)
	}
	_, e := translate(t, `{"model":"m",`+userHi+`,"tools":[`+strings.Join(tools, ",")+`]}`)
	if e == nil || e.Status != http.StatusBadRequest || !strings.HasPrefix(e.Param, "tools[") {
		t.Fatalf("eight tools of 2^12 nodes each: got %v, want a 400 naming a tool", e)
	}
}

// TestRequestRefusesMoreStopsThanGemini calls Request directly: the OpenAI
// parser already stops at 4 sequences, below Gemini's 5.
func TestRequestRefusesMoreStopsThanGemini(t *testing.T) {
	t.Parallel()
	req := &openaiapi.ChatRequest{Model: "m", Messages: []openaiapi.Message{{Role: "user", Content: openaiapi.Content{Text: "Hi"}}},
		Stop: openaiapi.StringList{"a", "b", "c", "d", "e", "f"}}
	_, e := New(testTarget()).Request(req, nil)
	if e == nil || e.Param != "stop" {
		t.Fatalf("got %v, want a 400 naming stop", e)
	}
}

func TestRequestMapping(t *testing.T) {
	t.Parallel()
	text := func(s string) part { return part{Text: s} }
	tests := []struct {
		name string
		body string
		// pick selects the part of the Gemini request the row is about.
		pick func(*generateRequest) any
		want any
	}{
		{
			name: "consecutive user messages merge into one turn",
			body: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]}]}`,
			pick: func(g *generateRequest) any { return g.Contents },
			want: []content{{Role: "user", Parts: []part{text("a"), text("b")}}},
		},
		{
			name: "an empty assistant turn is left out",
			body: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":""},{"role":"user","content":"b"}]}`,
			pick: func(g *generateRequest) any { return g.Contents },
			want: []content{{Role: "user", Parts: []part{text("a"), text("b")}}},
		},
		{
			name: "an assistant refusal is replayed as text",
			body: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":null,"refusal":"I can't."},{"role":"user","content":"b"}]}`,
			pick: func(g *generateRequest) any { return g.Contents[1] },
			want: content{Role: "model", Parts: []part{text("I can't.")}},
		},
		{
			name: "leading system and developer messages are the systemInstruction, in order",
			body: `{"model":"m","messages":[{"role":"system","content":"one"},{"role":"developer","content":[{"type":"text","text":"two"}]},{"role":"user","content":"a"}]}`,
			pick: func(g *generateRequest) any { return []any{g.SystemInstruction, g.Contents} },
			want: []any{&content{Parts: []part{text("one"), text("two")}}, []content{{Role: "user", Parts: []part{text("a")}}}},
		},
		{
			name: "a later system message is marked text where it stands, merged into the user turn",
			body: `{"model":"m","messages":[{"role":"system","content":"one"},{"role":"user","content":"a"},{"role":"developer","content":"two"},{"role":"user","content":"b"}]}`,
			pick: func(g *generateRequest) any { return []any{g.SystemInstruction, g.Contents} },
			want: []any{&content{Parts: []part{text("one")}}, []content{{Role: "user", Parts: []part{text("a"), text("<system-message>\ntwo\n</system-message>"), text("b")}}}},
		},
		{
			name: "a system message after the model's turn opens the next user turn",
			body: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"system","content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}]}`,
			pick: func(g *generateRequest) any { return []any{g.SystemInstruction, g.Contents} },
			want: []any{(*content)(nil), []content{{Role: "user", Parts: []part{text("a")}}, {Role: "model", Parts: []part{text("b")}}, {Role: "user", Parts: []part{text("<system-message>\nx\ny\n</system-message>")}}}},
		},
		{
			name: "an empty later system message adds nothing",
			body: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"system","content":""}]}`,
			pick: func(g *generateRequest) any { return g.Contents },
			want: []content{{Role: "user", Parts: []part{text("a")}}},
		},
		{
			name: "a JSON object tool result is nested under output",
			body: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":" {\"error\": \"not found\"} "}]}`,
			pick: func(g *generateRequest) any { return string(g.Contents[2].Parts[0].FunctionResponse.Response) },
			want: `{"output":{"error":"not found"}}`,
		},
		{
			name: "a tool result that only looks like JSON stays text",
			body: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"{oops"}]}`,
			pick: func(g *generateRequest) any { return string(g.Contents[2].Parts[0].FunctionResponse.Response) },
			want: `{"output":"{oops"}`,
		},
		{
			name: "an empty tool result is an empty output",
			body: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":""}]}`,
			pick: func(g *generateRequest) any { return string(g.Contents[2].Parts[0].FunctionResponse.Response) },
			want: `{"output":""}`,
		},
		{
			name: "tool_choice auto without tools is dropped",
			body: `{"model":"m",` + userHi + `,"tool_choice":"auto"}`,
			pick: func(g *generateRequest) any { return g.ToolConfig },
			want: (*toolConfig)(nil),
		},
		{
			name: "response_format text sets nothing",
			body: `{"model":"m",` + userHi + `,"response_format":{"type":"text"}}`,
			pick: func(g *generateRequest) any { return g.GenerationConfig.ResponseMimeType },
			want: "",
		},
		{
			name: "json_schema without a schema is JSON mode",
			body: `{"model":"m",` + userHi + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`,
			pick: func(g *generateRequest) any {
				return g.GenerationConfig.ResponseMimeType + " " + string(g.GenerationConfig.ResponseJSONSchema)
			},
			want: "application/json ",
		},
		{
			name: "a client cap below the maximum is kept",
			body: `{"model":"m",` + userHi + `,"max_completion_tokens":77}`,
			pick: func(g *generateRequest) any { return g.GenerationConfig.MaxOutputTokens },
			want: 77,
		},
		{
			name: "temperature zero is sent",
			body: `{"model":"m",` + userHi + `,"temperature":0}`,
			pick: func(g *generateRequest) any { return *g.GenerationConfig.Temperature },
			want: 0.0,
		},
		{
			name: "parameters without a type are an object",
			body: `{"model":"m",` + userHi + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"a":{"type":"string"}}}}}]}`,
			pick: func(g *generateRequest) any { return string(g.Tools[0].FunctionDeclarations[0].Parameters) },
			want: `{"properties":{"a":{"type":"string"}},"type":"object"}`,
		},
		{
			name: "an image URL's type comes from its extension",
			body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://x.test/a/b.webp"}}]}]}`,
			pick: func(g *generateRequest) any { return *g.Contents[0].Parts[0].FileData },
			want: fileData{MimeType: "image/webp", FileURI: "http://x.test/a/b.webp"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, e := translate(t, tt.body)
			if e != nil {
				t.Fatalf("got refusal %v, want a translation", e)
			}
			if diff := cmp.Diff(tt.want, tt.pick(g)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestAddressing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		basePath string
		upstream string
		key      string
		stream   bool
		wantPath string
		wantKey  string
	}{
		{"plain", "", "gemini-2.5-flash", "k1", false, "/v1beta/models/gemini-2.5-flash:generateContent", "k1"},
		{"streamed", "", "gemini-2.5-flash", "k1", true, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "k1"},
		{"base path and prefixed model name", "/proxy/google", "models/gemini-2.5-pro", "k2", false, "/proxy/google/v1beta/models/gemini-2.5-pro:generateContent", "k2"},
		{"no key, no auth header", "", "gemini-2.5-flash", "", false, "/v1beta/models/gemini-2.5-flash:generateContent", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			target := testTarget()
			p := *target.Provider
			m := *target.Model
			p.BasePath, m.Upstream, target.Key = tt.basePath, tt.upstream, tt.key
			target.Provider, target.Model = &p, &m
			req := &openaiapi.ChatRequest{Model: "m", Stream: tt.stream, Messages: []openaiapi.Message{{Role: "user", Content: openaiapi.Content{Text: "Hi"}}}}
			up, e := New(target).Request(req, nil)
			if e != nil {
				t.Fatal(e)
			}
			if up.Path != tt.wantPath {
				t.Errorf("got path %q, want %q", up.Path, tt.wantPath)
			}
			if got := up.Header.Get("x-goog-api-key"); got != tt.wantKey {
				t.Errorf("got x-goog-api-key %q, want %q", got, tt.wantKey)
			}
			if strings.Contains(up.Path, "key=") {
				t.Errorf("got the key in the query: %q", up.Path)
			}
		})
	}
}

func TestThoughtSignatureRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sig  string
	}{
		{"padded", "CiQBcsjafP+/+A8="},
		{"unpadded", "CiQBcsjafP+/+A8"},
		{"slashes and pluses", "+/+/AAEC+/8="},
		{"not base64 is kept verbatim", "not*base64"},
	}
	idChars := func(s string) bool {
		return strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := "call_x" + thoughtSeparator + signatureForID(tt.sig)
			got := signatureFromID(id)
			want := tt.sig
			if tt.name == "unpadded" {
				want += "=" // Gemini gets the standard, padded form
			}
			if got != want {
				t.Errorf("got signature %q back, want %q", got, want)
			}
			if tt.name != "not base64 is kept verbatim" && !idChars(id) {
				t.Errorf("got id %q, want only [A-Za-z0-9_-]", id)
			}
		})
	}
	if got := signatureFromID("call_plain"); got != "" {
		t.Errorf("got signature %q from an id without one, want none", got)
	}
}
