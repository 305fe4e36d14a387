package providersim

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
