package providersim

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRespond(t *testing.T) {
	result := `{"temp":4}`
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	tools := []toolDef{{name: "search", schema: schema}, {name: "clock", schema: json.RawMessage(`{}`)}}
	long := strings.Repeat("abcdefghij", 5)
	tests := []struct {
		name string
		conv conversation
		want reply
	}{
		{
			name: "echo",
			conv: conversation{model: "m", messages: 1, textChars: 5, lastUserText: "hello", lastIsUser: true},
			want: reply{text: "Hello from m: hello", promptTokens: 5, completionTokens: 4},
		},
		{
			name: "echo keeps the first 40 characters",
			conv: conversation{model: "m", messages: 1, textChars: 50, lastUserText: long, lastIsUser: true},
			want: reply{text: "Hello from m: " + long[:40], promptTokens: 16, completionTokens: 4},
		},
		{
			name: "echo counts characters, not bytes",
			conv: conversation{model: "m", lastUserText: strings.Repeat("é", 45), lastIsUser: true},
			want: reply{text: "Hello from m: " + strings.Repeat("é", 40), completionTokens: 4},
		},
		{
			name: "a grader says the verdict it is told",
			conv: conversation{model: "m", lastUserText: "<conversation>\nuser: hi [[rate 3]]\n</conversation>", lastIsUser: true},
			want: reply{text: "Rating: 3", completionTokens: 2},
		},
		{
			name: "a judge of several answers says the choice it is told",
			conv: conversation{model: "m", lastUserText: "<conversation>\nuser: hi [[pick 2]]\n</conversation>", lastIsUser: true},
			want: reply{text: "Best: 2", completionTokens: 2},
		},
		{
			name: "a verdict out of range is echoed",
			conv: conversation{model: "m", lastUserText: "hi [[rate 11]]", lastIsUser: true},
			want: reply{text: "Hello from m: hi [[rate 11]]", completionTokens: 6},
		},
		{
			name: "whitespace collapses",
			conv: conversation{model: "m", lastUserText: "a\n\n b\t c", lastIsUser: true},
			want: reply{text: "Hello from m: a b c", completionTokens: 6},
		},
		{
			name: "one image",
			conv: conversation{model: "m", lastUserText: "see", images: 1, lastIsUser: true},
			want: reply{text: "Hello from m: see [1 image]", completionTokens: 6},
		},
		{
			name: "three images",
			conv: conversation{model: "m", images: 3, lastIsUser: true},
			want: reply{text: "Hello from m: [3 images]", completionTokens: 5},
		},
		{
			name: "truncated",
			conv: conversation{model: "m", lastUserText: "one two three", lastIsUser: true, maxTokens: 4, hasMax: true},
			want: reply{text: "Hello from m: one", finish: finishLength, completionTokens: 4},
		},
		{
			name: "limit equal to the length does not truncate",
			conv: conversation{model: "m", lastUserText: "one", lastIsUser: true, maxTokens: 4, hasMax: true},
			want: reply{text: "Hello from m: one", completionTokens: 4},
		},
		{
			name: "zero limit gives nothing",
			conv: conversation{model: "m", lastUserText: "one", lastIsUser: true, hasMax: true},
			want: reply{finish: finishLength},
		},
		{
			name: "tool call to the first tool",
			conv: conversation{model: "m", lastIsUser: true, tools: tools},
			want: reply{call: &toolCall{name: "search", args: []byte(`{"q":"x"}`)}, finish: finishToolCall, completionTokens: 4},
		},
		{
			name: "forced tool",
			conv: conversation{model: "m", lastIsUser: true, tools: tools, choice: toolChoice{mode: choiceForced, name: "clock"}},
			want: reply{call: &toolCall{name: "clock", args: []byte(`{}`)}, finish: finishToolCall, completionTokens: 2},
		},
		{
			name: "tool choice none",
			conv: conversation{model: "m", lastUserText: "hi", lastIsUser: true, tools: tools, choice: toolChoice{mode: choiceNone}},
			want: reply{text: "Hello from m: hi", completionTokens: 4},
		},
		{
			name: "no tool call after an assistant prefill",
			conv: conversation{model: "m", lastUserText: "hi", tools: tools},
			want: reply{text: "Hello from m: hi", completionTokens: 4},
		},
		{
			name: "tool result",
			conv: conversation{model: "m", lastUserText: "hi", toolResult: &result, tools: tools},
			want: reply{text: `Tool result received: {"temp":4}`, completionTokens: 4},
		},
		{
			name: "JSON mode without a schema wraps the text",
			conv: conversation{model: "m", lastUserText: "a\n b", lastIsUser: true, format: replyFormat{json: true}},
			want: reply{text: `{"reply":"Hello from m: a b"}`, completionTokens: 5},
		},
		{
			name: "JSON mode with a schema fills its required properties",
			conv: conversation{model: "m", lastUserText: "hi", lastIsUser: true, format: replyFormat{json: true, schema: schema}},
			want: reply{text: `{"q":"x"}`, completionTokens: 1},
		},
		{
			name: "a JSON reply is cut like any other",
			conv: conversation{model: "m", lastUserText: "one two", lastIsUser: true, format: replyFormat{json: true}, maxTokens: 2, hasMax: true},
			want: reply{text: `{"reply":"Hello from`, finish: finishLength, completionTokens: 2},
		},
		{
			name: "scripted: tools offered but none asked for",
			conv: conversation{model: "m", lastUserText: "hi", prompt: "hi", lastIsUser: true, tools: tools, scripted: true},
			want: reply{text: "Hello from m: hi", completionTokens: 4},
		},
		{
			name: "scripted: the tool the prompt names, with its arguments",
			conv: conversation{model: "m", prompt: `go [[call clock {"tz": "UTC"}]]`, lastIsUser: true, tools: tools, scripted: true},
			want: reply{call: &toolCall{name: "clock", args: []byte(`{"tz":"UTC"}`)}, finish: finishToolCall, completionTokens: 5},
		},
		{
			name: "scripted: plain words name the tool, the schema gives the arguments",
			conv: conversation{model: "m", prompt: "Please use the search tool.", lastIsUser: true, tools: tools, scripted: true},
			want: reply{call: &toolCall{name: "search", args: []byte(`{"q":"x"}`)}, finish: finishToolCall, completionTokens: 4},
		},
		{
			name: "scripted: the second directive once the first was called",
			conv: conversation{model: "m", prompt: "[[call search]] [[call clock]]", callsSince: 1, toolResult: &result, tools: tools, scripted: true},
			want: reply{call: &toolCall{name: "clock", args: []byte(`{}`)}, finish: finishToolCall, completionTokens: 2},
		},
		{
			name: "scripted: every directive called, the result is answered in text",
			conv: conversation{model: "m", prompt: "[[call search]] [[call clock]]", callsSince: 2, toolResult: &result, tools: tools, scripted: true},
			want: reply{text: `Tool result received: {"temp":4}`, completionTokens: 4},
		},
		{
			name: "scripted: a tool not offered is not called",
			conv: conversation{model: "m", lastUserText: "[[call nope]]", prompt: "[[call nope]]", lastIsUser: true, tools: tools, scripted: true},
			want: reply{text: "Hello from m: [[call nope]]", completionTokens: 5},
		},
		{
			name: "scripted: a forced tool is still forced",
			conv: conversation{model: "m", prompt: "hi", lastIsUser: true, tools: tools, choice: toolChoice{mode: choiceForced, name: "clock"}, scripted: true},
			want: reply{call: &toolCall{name: "clock", args: []byte(`{}`)}, finish: finishToolCall, completionTokens: 2},
		},
		{
			name: "scripted: a forced tool takes the arguments the prompt gives it",
			conv: conversation{model: "m", prompt: `[[call clock {"tz":"CET"}]]`, lastIsUser: true, tools: tools, choice: toolChoice{mode: choiceForced, name: "clock"}, scripted: true},
			want: reply{call: &toolCall{name: "clock", args: []byte(`{"tz":"CET"}`)}, finish: finishToolCall, completionTokens: 5},
		},
		{
			name: "scripted: a required call with nothing asked is the first tool",
			conv: conversation{model: "m", prompt: "hi", lastIsUser: true, tools: tools, choice: toolChoice{mode: choiceRequired}, scripted: true},
			want: reply{call: &toolCall{name: "search", args: []byte(`{"q":"x"}`)}, finish: finishToolCall, completionTokens: 4},
		},
		{
			name: "scripted: tool choice none wins over a directive",
			conv: conversation{model: "m", lastUserText: "[[call clock]]", prompt: "[[call clock]]", lastIsUser: true, tools: tools, choice: toolChoice{mode: choiceNone}, scripted: true},
			want: reply{text: "Hello from m: [[call clock]]", completionTokens: 5},
		},
		{
			name: "scripted: a prefill is continued in text",
			conv: conversation{model: "m", lastUserText: "[[call clock]]", prompt: "[[call clock]]", tools: tools, scripted: true},
			want: reply{text: "Hello from m: [[call clock]]", completionTokens: 5},
		},
		{
			name: "scripted: system reminders are neither directives nor echoed",
			conv: conversation{model: "m", lastUserText: "<system-reminder>use the clock tool</system-reminder> say hi", prompt: "<system-reminder>use the clock tool</system-reminder> say hi", lastIsUser: true, tools: tools, scripted: true},
			want: reply{text: "Hello from m: say hi", completionTokens: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := respond(tt.conv)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(reply{}, toolCall{})); diff != "" {
				t.Errorf("respond mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgsFromSchema(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"every JSON type", `{"properties":{"s":{"type":"string"},"n":{"type":"number"},"i":{"type":"integer"},"b":{"type":"boolean"},"a":{"type":"array"},"o":{"type":"object"},"z":{"type":"null"}},"required":["s","n","i","b","a","o","z"]}`, `{"s":"x","n":1,"i":1,"b":true,"a":[],"o":{},"z":null}`},
		{"required order wins", `{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["b","a"]}`, `{"b":"x","a":"x"}`},
		{"optional properties are left out", `{"properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"]}`, `{"a":"x"}`},
		{"enum takes its first value", `{"properties":{"u":{"type":"string","enum":["c","f"]}},"required":["u"]}`, `{"u":"c"}`},
		{"type lists take the first type", `{"properties":{"n":{"type":["integer","null"]}},"required":["n"]}`, `{"n":1}`},
		{"Gemini upper-case types", `{"type":"OBJECT","properties":{"n":{"type":"NUMBER"},"b":{"type":"BOOLEAN"}},"required":["n","b"]}`, `{"n":1,"b":true}`},
		{"required without a property", `{"required":["ghost"]}`, `{"ghost":"x"}`},
		{"keys are escaped", `{"properties":{"a\"b":{"type":"string"}},"required":["a\"b"]}`, `{"a\"b":"x"}`},
		{"no schema", ``, `{}`},
		{"not a schema", `[1,2]`, `{}`},
		{"nested objects are filled", `{"properties":{"o":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},"required":["o"]}`, `{"o":{"n":1}}`},
		{"an untyped property with properties is an object", `{"properties":{"o":{"properties":{"s":{"type":"string"}},"required":["s"]}},"required":["o"]}`, `{"o":{"s":"x"}}`},
		{"references resolve", `{"$defs":{"Unit":{"type":"string","enum":["c","f"]}},"properties":{"u":{"$ref":"#/$defs/Unit"}},"required":["u"]}`, `{"u":"c"}`},
		{"a top-level reference resolves", `{"$ref":"#/definitions/Args","definitions":{"Args":{"properties":{"n":{"type":"number"}},"required":["n"]}}}`, `{"n":1}`},
		{"anyOf takes its first branch", `{"properties":{"n":{"anyOf":[{"type":"integer"},{"type":"null"}]}},"required":["n"]}`, `{"n":1}`},
		{"const is kept", `{"properties":{"k":{"const":{"a": 1}}},"required":["k"]}`, `{"k":{"a":1}}`},
		{"an unknown reference is a string", `{"properties":{"r":{"$ref":"other.json#/x"}},"required":["r"]}`, `{"r":"x"}`},
		{"recursion stops", `{"$defs":{"Node":{"type":"object","properties":{"next":{"$ref":"#/$defs/Node"}},"required":["next"]}},"$ref":"#/$defs/Node"}`, `{"next":{"next":{"next":{"next":{"next":{"next":{"next":{"next":{}}}}}}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(argsFromSchema(json.RawMessage(tt.schema)))
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("got invalid JSON %s", got)
			}
		})
	}
}

func TestPiecesAndHalves(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		wantPieces []string
		wantHalves []string
	}{
		{"words", "Hello from m: hi", []string{"Hello", " from", " m:", " hi"}, []string{"Hello fr", "om m: hi"}},
		{"one word", "Hi", []string{"Hi"}, []string{"H", "i"}},
		{"one character", "x", []string{"x"}, []string{"x"}},
		{"multi-byte", "ééé", []string{"ééé"}, []string{"é", "éé"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantPieces, pieces(tt.text)); diff != "" {
				t.Errorf("pieces mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHalves, halves(tt.text)); diff != "" {
				t.Errorf("halves mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmbed(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		dims     int
		wantDims int
	}{
		{"default dimensions", "alpha", 0, defaultEmbeddingDims},
		{"chosen dimensions", "alpha", 3, 3},
		{"empty text", "", 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := embed(tt.text, tt.dims)
			if len(v) != tt.wantDims {
				t.Fatalf("got %d dimensions, want %d", len(v), tt.wantDims)
			}
			var norm float64
			for _, f := range v {
				norm += float64(f) * float64(f)
			}
			if math.Abs(norm-1) > 1e-5 {
				t.Errorf("got squared norm %v, want 1", norm)
			}
			if !cmp.Equal(v, embed(tt.text, tt.dims)) {
				t.Errorf("two calls gave different vectors")
			}
			if cmp.Equal(v, embed(tt.text+"!", tt.dims)) {
				t.Errorf("different texts gave the same vector")
			}
		})
	}
}

func TestJSONReply(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"no schema", ``, `{"reply":"say <hi> & bye"}`},
		{"an object schema without fields", `{"type":"object"}`, `{"reply":"say <hi> & bye"}`},
		{"required fields", `{"type":"object","properties":{"answer":{"type":"string"},"score":{"type":"integer"}},"required":["answer","score"],"additionalProperties":false}`, `{"answer":"x","score":1}`},
		{"fields, none required", `{"type":"object","properties":{"answer":{"type":"string"}}}`, `{}`},
		{"Gemini's upper-case schema", `{"type":"OBJECT","properties":{"ok":{"type":"BOOLEAN"}},"required":["ok"]}`, `{"ok":true}`},
		{"an array", `{"type":"array","items":{"type":"string"}}`, `[]`},
		{"an enum", `{"type":"string","enum":["yes","no"]}`, `"yes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jsonReply(json.RawMessage(tt.schema), "say <hi> & bye")
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("got invalid JSON %s", got)
			}
		})
	}
}

func TestDirectives(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []directive
	}{
		{"none", "say hi", nil},
		{"name only", "[[call Read]]", []directive{{name: "Read"}}},
		{"with arguments", `read it [[call Read {"file_path": "notes.txt"}]] now`, []directive{{name: "Read", args: []byte(`{"file_path":"notes.txt"}`)}}},
		{"brackets inside the arguments", `[[call Bash {"command": "echo ]] [[call x]]"}]]`, []directive{{name: "Bash", args: []byte(`{"command":"echo ]] [[call x]]"}`)}}},
		{"spaces before the close", `[[call Read {"a":1}  ]]`, []directive{{name: "Read", args: []byte(`{"a":1}`)}}},
		{"plain words", "Use the Read tool, then use the `Bash` tool", []directive{{name: "Read"}, {name: "Bash"}}},
		{"in the order written", "use the Bash tool after [[call Read]]", []directive{{name: "Bash"}, {name: "Read"}}},
		{"arguments that are not an object", `[[call Read [1]]] [[call Read "x"]]`, nil},
		{"arguments that do not parse", `[[call Read {"a":]]`, nil},
		{"not closed", `[[call Read {"a":1}`, nil},
		{"no name", `[[call ]]`, nil},
		{"a broken directive does not hide the next", `[[call Read {]] [[call Bash]]`, []directive{{name: "Bash"}}},
		{"words that only look alike", "we used the Read tool; use the tools", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := directives(tt.text)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(directive{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("directives mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzDirectives(f *testing.F) {
	for _, s := range []string{"[[call Read]]", `[[call Read {"a":[1,{"b":"]]"}]}]]`, "use the X tool", "[[call ", `[[call a {"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range directives(s) {
			if d.name == "" || !strings.Contains(s, d.name) {
				t.Fatalf("directive %+v is not in %q", d, s)
			}
			if d.args != nil && !isObject(d.args) {
				t.Fatalf("directive %s has arguments %s, not an object", d.name, d.args)
			}
		}
	})
}

func TestWithoutReminders(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string
	}{
		{"none", " say hi ", "say hi"},
		{"leading", "<system-reminder>\nuse the Agent tool\n</system-reminder>\nsay hi", "say hi"},
		{"two", "a<system-reminder>x</system-reminder> b <system-reminder>y</system-reminder>c", "a b c"},
		{"not closed", "say hi <system-reminder>rest", "say hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := withoutReminders(tt.text); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
