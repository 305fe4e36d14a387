package providersim_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/providersim"
)

// TestGeminiSchemaValidation checks the function declaration schemas the
// Gemini simulator refuses, as the API does, in its native envelope.
func TestGeminiSchemaValidation(t *testing.T) {
	const path = "/v1beta/models/gemini-2.5-flash:generateContent"
	body := func(params string) string {
		return `{"contents":[{"parts":[{"text":"Hi"}]}],"tools":[{"functionDeclarations":[{"name":"t","parameters":` + params + `}]}]}`
	}
	tests := []struct {
		name       string
		params     string
		wantStatus int
		wantMsg    string // substring
	}{
		{"allOf is not a Schema field", `{"type":"object","properties":{"to":{"type":"string","allOf":[{"pattern":"a"},{"pattern":"b"}]}}}`, 400,
			`Unknown name "allOf" at 'tools[0].function_declarations[0].parameters.properties[to].value': Cannot find field.`},
		{"$ref is not a Schema field", `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}}}`, 400, `Unknown name "$ref"`},
		{"additionalProperties is not a Schema field", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, 400, `Unknown name "additionalProperties" at 'tools[0].function_declarations[0].parameters'`},
		{"const is not a Schema field", `{"type":"object","properties":{"a":{"type":"string","const":"x"}}}`, 400, `Unknown name "const"`},
		{"type is not a list", `{"type":"object","properties":{"a":{"type":["string","null"]}}}`, 400, `Unknown name "type" at 'tools[0].function_declarations[0].parameters.properties[a].value': Proto field is not repeating, cannot start list.`},
		{"type is a type name", `{"type":"object","properties":{"a":{"type":"text"}}}`, 400, `(type.googleapis.com/google.ai.generativelanguage.v1beta.Type), "text"`},
		{"enum holds strings", `{"type":"object","properties":{"a":{"type":"integer","enum":[1,2]}}}`, 400, `Invalid value at 'tools[0].function_declarations[0].parameters.properties[a].value.enum[0]' (TYPE_STRING), 1`},
		{"counts are integers", `{"type":"object","properties":{"a":{"type":"string","maxLength":2.5}}}`, 400, `(TYPE_INT64), 2.5`},
		{"a nested anyOf branch is checked", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null","oneOf":[]}]}}}`, 400, `Unknown name "oneOf" at 'tools[0].function_declarations[0].parameters.properties[a].value.anyOf[1]'`},
		{"items are checked", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","format":"uuid","uniqueItems":true}}}}`, 400, `Unknown name "uniqueItems"`},
		{"a node needs a type or anyOf", `{"type":"object","properties":{"a":{"description":"anything"}}}`, 400,
			`parameters.properties[a].value.type: must be specified when not using one_of, any_of or all_of fields`},
		{"parse errors come before a missing type", `{"type":"object","properties":{"a":{"description":"x"},"b":{"type":"string","examples":["y"]}}}`, 400, `Unknown name "examples"`},
		{"every Schema field passes", `{"type":"OBJECT","title":"T","description":"D","nullable":false,"required":["s"],"propertyOrdering":["s","n","l"],"minProperties":1,"maxProperties":"3",
			"properties":{"s":{"type":"string","format":"date-time","enum":["2026-01-01T00:00:00Z"],"minLength":1,"maxLength":40,"pattern":".","example":"x","default":"y"},
			"n":{"anyOf":[{"type":"number","minimum":0.5,"maximum":9},{"type":"integer","nullable":true}]},
			"l":{"type":"array","items":{"type":"boolean"},"min_items":1,"maxItems":3}}}`, 200, ""},
		{"no parameters pass", `null`, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, _ := startKind(t, providersim.KindGemini)
			resp, got := do(t, sim.URL(string(providersim.KindGemini)), call{path: path, body: body(tt.params)})
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("got status %d, want %d; body: %s", resp.StatusCode, tt.wantStatus, got)
			}
			if tt.wantStatus == 200 {
				return
			}
			typ, msg := nativeError(t, providersim.KindGemini, got)
			if typ != "INVALID_ARGUMENT" || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("got %s %q, want INVALID_ARGUMENT with %q", typ, msg, tt.wantMsg)
			}
		})
	}
}
