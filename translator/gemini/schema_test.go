package gemini

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/providersim"
)

// lowerParams runs one parameters schema through cleanParameters and
// checks that Gemini would take the result.
func lowerParams(t *testing.T, schema string) (string, error) {
	t.Helper()
	out, err := cleanParameters(json.RawMessage(schema), newSchemaBudget())
	if err != nil || out == nil {
		return string(out), err
	}
	if verr := providersim.ValidateGeminiSchema("parameters", out); verr != nil {
		t.Errorf("Gemini would refuse %s: %v", out, verr)
	}
	return string(out), nil
}

func TestSchemaLowering(t *testing.T) {
	t.Parallel()
	obj := func(props string) string { return `{"type":"object","properties":{` + props + `}}` }
	tests := []struct {
		name    string
		in      string
		want    string // the "a" property, or the whole schema when in has no property a
		wantErr string // the error's start: path and reason
	}{
		{
			// Claude Code's SendMessage: zod's .regex().regex() on one string.
			name: "allOf of two patterns keeps one and describes the other",
			in:   obj(`"a":{"type":"string","description":"Recipient.","allOf":[{"pattern":"^[a-z][a-z0-9-]*$"},{"pattern":"^(?!self$)"}]}`),
			want: `{"description":"Recipient.\n\nMust also match the pattern ` + "`^(?!self$)`" + `.","pattern":"^[a-z][a-z0-9-]*$","type":"string"}`,
		},
		{
			name: "allOf unites properties and required",
			in:   obj(`"a":{"allOf":[{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]},{"properties":{"y":{"type":"integer"}},"required":["y"]}]}`),
			want: `{"properties":{"x":{"type":"string"},"y":{"type":"integer"}},"required":["x","y"],"type":"object"}`,
		},
		{
			name: "allOf merges a property both parts declare",
			in:   obj(`"a":{"allOf":[{"properties":{"x":{"type":"string","maxLength":9}}},{"properties":{"x":{"minLength":2,"maxLength":5}}}]}`),
			want: `{"properties":{"x":{"maxLength":5,"minLength":2,"type":"string"}},"type":"object"}`,
		},
		{
			name: "allOf of number and integer is integer, bounds tighten",
			in:   obj(`"a":{"type":"number","minimum":0,"maximum":10,"allOf":[{"type":"integer","minimum":2},{"maximum":20}]}`),
			want: `{"maximum":10,"minimum":2,"type":"integer"}`,
		},
		{
			name: "allOf intersects enums",
			in:   obj(`"a":{"enum":["x","y","z"],"allOf":[{"enum":["y","z","w"]}]}`),
			want: `{"enum":["y","z"],"type":"string"}`,
		},
		{
			name:    "allOf of two types allows nothing",
			in:      obj(`"a":{"allOf":[{"type":"string"},{"type":"integer"}]}`),
			wantErr: "properties.a.allOf[1]: allows no value",
		},
		{
			name:    "allOf of disjoint enums allows nothing",
			in:      obj(`"a":{"enum":["x"],"allOf":[{"enum":["y"]}]}`),
			wantErr: "properties.a.allOf[0]: allows no value",
		},
		{
			name: "$ref is inlined; the description beside it wins",
			in:   `{"type":"object","$defs":{"addr":{"type":"object","description":"An address.","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},"properties":{"a":{"$ref":"#/$defs/addr","description":"Pick-up address."}}}`,
			want: `{"description":"Pick-up address.","properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}`,
		},
		{
			name: "$ref into definitions and to a property",
			in:   `{"type":"object","definitions":{"id":{"type":"string","pattern":"^u_"}},"properties":{"b":{"$ref":"#/definitions/id"},"a":{"type":"array","items":{"$ref":"#/properties/b"}}}}`,
			want: `{"items":{"pattern":"^u_","type":"string"},"type":"array"}`,
		},
		{
			name: "a recursive $ref is cut one level down",
			in:   `{"type":"object","$defs":{"node":{"type":"object","description":"A node.","properties":{"next":{"$ref":"#/$defs/node"}}}},"properties":{"a":{"$ref":"#/$defs/node"}}}`,
			want: `{"description":"A node.","properties":{"next":{"description":"A node.\n\nHas the same structure as node again (recursive; not expanded further).","type":"object"}},"type":"object"}`,
		},
		{
			name:    "a remote $ref is refused",
			in:      obj(`"a":{"$ref":"https://example.net/schema.json"}`),
			wantErr: "properties.a.$ref: \"https://example.net/schema.json\" points outside this schema",
		},
		{
			name:    "a $ref to nothing is refused",
			in:      obj(`"a":{"$ref":"#/$defs/missing"}`),
			wantErr: "properties.a.$ref: \"#/$defs/missing\" points to nothing",
		},
		{
			name: "oneOf becomes anyOf",
			in:   obj(`"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}`),
			want: `{"anyOf":[{"type":"string"},{"type":"integer"}]}`,
		},
		{
			// pydantic's Optional[str].
			name: "anyOf with null is nullable",
			in:   obj(`"a":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"A"}`),
			want: `{"default":null,"nullable":true,"title":"A","type":"string"}`,
		},
		{
			name: "anyOf of two types and null makes each branch nullable",
			in:   obj(`"a":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}`),
			want: `{"anyOf":[{"nullable":true,"type":"string"},{"nullable":true,"type":"integer"}]}`,
		},
		{
			name: "branches without a type take their node's",
			in:   obj(`"a":{"type":"string","anyOf":[{"pattern":"^a"},{"maxLength":2}]}`),
			want: `{"anyOf":[{"pattern":"^a","type":"string"},{"maxLength":2,"type":"string"}],"type":"string"}`,
		},
		{
			name: "type with null is nullable",
			in:   obj(`"a":{"type":["string","null"],"maxLength":3}`),
			want: `{"maxLength":3,"nullable":true,"type":"string"}`,
		},
		{
			name: "several types split into anyOf, each with its keywords",
			in:   obj(`"a":{"type":["string","integer","array"],"description":"Id or ids.","maxLength":8,"minimum":1,"items":{"type":"integer"}}`),
			want: `{"anyOf":[{"maxLength":8,"type":"string"},{"minimum":1,"type":"integer"},{"items":{"type":"integer"},"type":"array"}],"description":"Id or ids."}`,
		},
		{
			name:    "type null alone is refused",
			in:      obj(`"a":{"type":"null"}`),
			wantErr: "properties.a: allows only null",
		},
		{
			name: "a string const is a one-value enum",
			in:   obj(`"a":{"const":"express"}`),
			want: `{"enum":["express"],"type":"string"}`,
		},
		{
			name: "another const is described",
			in:   obj(`"a":{"const":3}`),
			want: `{"description":"Always 3.","type":"integer"}`,
		},
		{
			name: "a numeric enum is described",
			in:   obj(`"a":{"type":"integer","enum":[1,2,4]}`),
			want: `{"description":"One of: 1, 2, 4.","type":"integer"}`,
		},
		{
			name: "an enum with null is nullable",
			in:   obj(`"a":{"enum":["x",null]}`),
			want: `{"enum":["x"],"nullable":true,"type":"string"}`,
		},
		{
			name: "an exclusive integer bound is exact",
			in:   obj(`"a":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10}`),
			want: `{"maximum":9,"minimum":1,"type":"integer"}`,
		},
		{
			name: "an exclusive number bound is described",
			in:   obj(`"a":{"type":"number","exclusiveMinimum":0}`),
			want: `{"description":"Must be greater than 0.","minimum":0,"type":"number"}`,
		},
		{
			name: "draft 4's boolean exclusiveMaximum",
			in:   obj(`"a":{"type":"integer","maximum":5,"exclusiveMaximum":true}`),
			want: `{"maximum":4,"type":"integer"}`,
		},
		{
			name: "formats Gemini knows stay, others are described",
			in:   obj(`"a":{"type":"object","properties":{"when":{"type":"string","format":"date-time"},"who":{"type":"string","format":"email"},"n":{"type":"number","format":"double"}}}`),
			want: `{"properties":{"n":{"format":"double","type":"number"},"when":{"format":"date-time","type":"string"},"who":{"description":"Format: email.","type":"string"}},"type":"object"}`,
		},
		{
			name: "multipleOf and uniqueItems are described",
			in:   obj(`"a":{"type":"array","uniqueItems":true,"items":{"type":"integer","multipleOf":5}}`),
			want: `{"description":"Items must be unique.","items":{"description":"Must be a multiple of 5.","type":"integer"},"type":"array"}`,
		},
		{
			// Claude Code's Workflow.args: any JSON value.
			name: "a schema without a type takes any value",
			in:   obj(`"a":{"description":"Anything."}`),
			want: `{"anyOf":[{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"object"},{"items":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"object"}]},"type":"array"}],"description":"Anything."}`,
		},
		{
			name: "true takes any value",
			in:   obj(`"a":{"type":"array","items":true}`),
			want: `{"items":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"object"},{"items":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"object"}]},"type":"array"}]},"type":"array"}`,
		},
		{
			name:    "false is refused",
			in:      obj(`"a":false`),
			wantErr: "properties.a: the schema false",
		},
		{
			name: "keywords imply a missing type",
			in:   obj(`"a":{"pattern":"^x","description":"X."}`),
			want: `{"description":"X.","pattern":"^x","type":"string"}`,
		},
		{
			name: "a tuple's positions become the item's choices",
			in:   obj(`"a":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}`),
			want: `{"items":{"anyOf":[{"type":"string"},{"type":"integer"}]},"type":"array"}`,
		},
		{
			name: "a map's value type is described",
			in:   obj(`"a":{"type":"object","additionalProperties":{"type":"string"},"propertyNames":{"pattern":"^[A-Z_]+$"}}`),
			want: `{"description":"Any keys, each value of type string.","type":"object"}`,
		},
		{
			name: "required names that are not properties are left out",
			in:   obj(`"a":{"type":"object","properties":{"x":{"type":"string"}},"required":["x","ghost"]}`),
			want: `{"properties":{"x":{"type":"string"}},"required":["x"],"type":"object"}`,
		},
		{
			name: "keywords of another type are left out",
			in:   obj(`"a":{"type":"string","items":{"type":"string"},"minimum":3,"maxLength":4}`),
			want: `{"maxLength":4,"type":"string"}`,
		},
		{
			name: "a top-level union of objects becomes one object",
			in:   `{"oneOf":[{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},{"type":"object","properties":{"url":{"type":"string"},"path":{"type":"string"}},"required":["url","path"]}]}`,
			want: `{"description":"Takes one of these argument sets: arguments path requiring path; or arguments path, url requiring url, path.","properties":{"path":{"type":"string"},"url":{"type":"string"}},"required":["path"],"type":"object"}`,
		},
		{
			name: "dropped keywords: $schema, additionalProperties, not, if, $comment",
			in:   `{"$schema":"https://json-schema.org/draft/2020-12/schema","$comment":"c","type":"object","additionalProperties":false,"properties":{"x":{"type":"string","not":{"const":""},"if":{"minLength":1},"then":{"maxLength":3}}}}`,
			want: `{"properties":{"x":{"type":"string"}},"type":"object"}`,
		},
		{
			name: "parameters without properties are left out",
			in:   `{"type":"object","properties":{},"additionalProperties":false}`,
			want: ``,
		},
		{
			name:    "parameters of another type",
			in:      `{"type":"array","items":{"type":"string"}}`,
			wantErr: `parameters must be a schema of type "object"`,
		},
		{
			name:    "a count that is not an integer",
			in:      obj(`"a":{"type":"string","maxLength":2.5}`),
			wantErr: "properties.a.maxLength: must be an integer",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := lowerParams(t, tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("got %v (%s), want an error starting %q", err, out, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want %s", err, tt.want)
			}
			got := out
			if strings.Contains(tt.in, `"a":`) {
				var s struct {
					Properties map[string]json.RawMessage `json:"properties"`
				}
				if err := json.Unmarshal([]byte(out), &s); err != nil {
					t.Fatal(err)
				}
				got = string(s.Properties["a"])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestSchemaRefusalNamesFieldAndProvider: a schema that cannot be lowered
// is refused with the path to the keyword and the provider's name.
func TestSchemaRefusalNamesFieldAndProvider(t *testing.T) {
	t.Parallel()
	body := `{"model":"m",` + userHi + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"allOf":[{"type":"string"},{"type":"integer"}]}}}}}]}`
	_, e := translate(t, body)
	if e == nil {
		t.Fatal("got no refusal")
	}
	const want = "tools[0].function.parameters.properties.a.allOf[1]: allows no value: its parts require different types; Gemini's function declarations cannot take this schema"
	if e.Param != "tools[0].function.parameters" || e.Message != want {
		t.Errorf("got param %q message %q, want %q", e.Param, e.Message, want)
	}
}

// agentTool is a tool schema of a captured agent request.
type agentTool struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
}

// TestAgentToolSchemas lowers every tool schema Claude Code and Codex send
// by default (testdata/schemas, extracted from real captures): each must
// translate, and Gemini must take the result.
func TestAgentToolSchemas(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/schemas/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tools []agentTool
		if err := json.Unmarshal(raw, &tools); err != nil || len(tools) == 0 {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tool := range tools {
			t.Run(filepath.Base(f)+"/"+tool.Name, func(t *testing.T) {
				t.Parallel()
				out, err := lowerParams(t, string(tool.Parameters))
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				// Every property the client declared reaches the model.
				var in, got struct {
					Properties map[string]json.RawMessage `json:"properties"`
				}
				_ = json.Unmarshal(tool.Parameters, &in)
				if out != "" {
					if err := json.Unmarshal([]byte(out), &got); err != nil {
						t.Fatal(err)
					}
				}
				for name := range in.Properties {
					if _, ok := got.Properties[name]; !ok {
						t.Errorf("property %q was lost: %s", name, out)
					}
				}
			})
		}
	}
}

// TestAgentToolsTranslate sends all of a fixture's tools in one request:
// the per-request budget holds a real agent's whole tool set.
func TestAgentToolsTranslate(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/schemas/*.json")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tools []agentTool
		if err := json.Unmarshal(raw, &tools); err != nil {
			t.Fatal(err)
		}
		var decls []string
		for i, tool := range tools {
			fn, _ := json.Marshal(map[string]any{"name": "t" + string(rune('a'+i)), "parameters": tool.Parameters})
			decls = append(decls, `{"type":"function","function":`+string(fn)+`}`)
		}
		g, e := translate(t, `{"model":"m",`+userHi+`,"tools":[`+strings.Join(decls, ",")+`]}`)
		if e != nil {
			t.Fatalf("%s: refused: %v", f, e.Message)
		}
		if n := len(g.Tools[0].FunctionDeclarations); n != len(tools) {
			t.Errorf("%s: got %d declarations, want %d", f, n, len(tools))
		}
	}
}

// FuzzCleanParameters: any schema is lowered into one Gemini takes, or
// refused with an error; never a panic, and never beyond the bounds.
func FuzzCleanParameters(f *testing.F) {
	files, _ := filepath.Glob("testdata/schemas/*.json")
	for _, file := range files {
		raw, _ := os.ReadFile(file)
		var tools []agentTool
		_ = json.Unmarshal(raw, &tools)
		for _, tool := range tools {
			f.Add([]byte(tool.Parameters))
		}
	}
	f.Add([]byte(`{"type":"object","properties":{"a":{"allOf":[{"pattern":"x"},{"pattern":"y"}]},"b":{"$ref":"#/properties/a"},"c":{"anyOf":[{"type":"null"},{"const":1}]}}}`))
	f.Add([]byte(doublingRefs(8)))
	f.Fuzz(func(t *testing.T, schema []byte) {
		budget := newSchemaBudget()
		out, err := cleanParameters(schema, budget)
		if err != nil || out == nil {
			return
		}
		if verr := providersim.ValidateGeminiSchema("parameters", out); verr != nil {
			t.Fatalf("%s lowered to %s, which Gemini refuses: %v", schema, out, verr)
		}
		if budget.nodes < 0 || budget.bytes < 0 {
			t.Fatalf("budget overspent: %+v", budget)
		}
		// Output grows only by what the budget pays for: notes and any-value
		// expansions, each bounded by the nodes spent.
		if limit := 4*len(schema) + maxSchemaBytes + 200*maxSchemaNodes; len(out) > limit {
			t.Fatalf("a %d-byte schema became %d bytes", len(schema), len(out))
		}
		if !bytes.HasPrefix(out, []byte("{")) {
			t.Fatalf("not an object: %s", out)
		}
	})
}
