package providersim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// gmSchemaFields are the fields of the Gemini API's Schema message (the
// OpenAPI 3.0 subset functionDeclarations[].parameters takes), with what
// each holds. The API parses parameters into that message, so any other
// field (allOf, $ref, const, additionalProperties…) is refused before a
// model sees the request. Proto JSON accepts the fields' snake_case names
// too.
var gmSchemaFields = map[string]string{
	"type": "type", "format": "string", "title": "string", "description": "string",
	"nullable": "bool", "enum": "strings", "required": "strings", "propertyOrdering": "strings",
	"minItems": "int", "maxItems": "int", "minProperties": "int", "maxProperties": "int",
	"minLength": "int", "maxLength": "int", "minimum": "number", "maximum": "number",
	"pattern": "string", "example": "any", "default": "any",
	"properties": "schemas by name", "items": "schema", "anyOf": "schema list",
}

// gmTypes are the values of the Schema's type enum.
var gmTypes = []string{"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}

// ValidateGeminiSchema checks a function declaration's parameters as the
// Gemini API does and returns its error message for the first violation.
// First, as the API parses the request: a field the Schema message lacks,
// a type that is a list or not a type name, enum/required entries that are
// not strings, counts that are not integers. Then, as it checks the parsed
// schema: a node with neither type nor anyOf. at is the path to the schema
// ("tools[0].function_declarations[0].parameters"). The translator's tests
// use it as the oracle for what Gemini accepts.
func ValidateGeminiSchema(at string, raw json.RawMessage) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return refusal("Invalid JSON payload received. %v", err)
	}
	if err := gmCheckSchema(at, v, false); err != nil {
		return err
	}
	return gmCheckSchema(at, v, true)
}

// gmCheckSchema walks a schema: parsing it (semantic false) or checking
// the parsed schema (semantic true).
func gmCheckSchema(at string, v any, semantic bool) error {
	s, ok := v.(map[string]any)
	if !ok {
		return refusal("Invalid JSON payload received. Expected an object for '%s' (type.googleapis.com/google.ai.generativelanguage.v1beta.Schema), got %s.", at, mustJSON(v))
	}
	_, typed := s["type"]
	_, union := s["anyOf"]
	_, unionSnake := s["any_of"]
	if semantic && !typed && !union && !unionSnake {
		return refusal("* GenerateContentRequest.%s.type: must be specified when not using one_of, any_of or all_of fields\n", at)
	}
	for _, key := range slices.Sorted(maps.Keys(s)) {
		if err := gmCheckField(at, key, s[key], semantic); err != nil {
			return err
		}
	}
	return nil
}

func gmCheckField(at, key string, v any, semantic bool) error {
	kind, ok := gmSchemaFields[gmCamel(key)]
	if !ok {
		return refusal("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", key, at)
	}
	field := at + "." + key
	if semantic && !strings.HasPrefix(kind, "schema") {
		return nil
	}
	invalid := func(typ string, v any) error {
		return refusal("Invalid value at '%s' (%s), %s", field, typ, mustJSON(v))
	}
	switch kind {
	case "type":
		name, ok := v.(string)
		if _, list := v.([]any); list {
			return refusal("Invalid JSON payload received. Unknown name \"type\" at '%s': Proto field is not repeating, cannot start list.", at)
		}
		if !ok || !slices.Contains(gmTypes, strings.ToUpper(name)) {
			return invalid("type.googleapis.com/google.ai.generativelanguage.v1beta.Type", v)
		}
	case "string":
		if _, ok := v.(string); !ok {
			return invalid("TYPE_STRING", v)
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			return invalid("TYPE_BOOL", v)
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			return invalid("TYPE_DOUBLE", v)
		}
	case "int":
		if !gmInteger(v) {
			return invalid("TYPE_INT64", v)
		}
	case "strings":
		list, ok := v.([]any)
		if !ok {
			return invalid("TYPE_STRING", v)
		}
		for i, e := range list {
			if _, ok := e.(string); !ok {
				return refusal("Invalid value at '%s[%d]' (TYPE_STRING), %s", field, i, mustJSON(e))
			}
		}
	case "schema":
		return gmCheckSchema(field, v, semantic)
	case "schema list":
		list, ok := v.([]any)
		if !ok {
			return refusal("Invalid JSON payload received. Expected a list for '%s'.", field)
		}
		for i, e := range list {
			if err := gmCheckSchema(fmt.Sprintf("%s[%d]", field, i), e, semantic); err != nil {
				return err
			}
		}
	case "schemas by name":
		props, ok := v.(map[string]any)
		if !ok {
			return refusal("Invalid JSON payload received. Expected an object for '%s'.", field)
		}
		for _, name := range slices.Sorted(maps.Keys(props)) {
			// The real API names map entries by position; the simulator
			// names them by key, which says more.
			if err := gmCheckSchema(fmt.Sprintf("%s[%s].value", field, name), props[name], semantic); err != nil {
				return err
			}
		}
	}
	return nil
}

// gmCamel turns a proto field's snake_case name into its JSON name.
func gmCamel(key string) string {
	parts := strings.Split(key, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// gmInteger reports an int64 as proto JSON takes it: a number without a
// fraction, or a string of one.
func gmInteger(v any) bool {
	switch v := v.(type) {
	case json.Number:
		_, err := v.Int64()
		return err == nil
	case string:
		_, err := json.Number(v).Int64()
		return err == nil
	}
	return false
}

// gmCheckDeclarations validates every function declaration's parameters.
func gmCheckDeclarations(tools []gmTool) *apiError {
	for i, t := range tools {
		for j, fd := range t.FunctionDeclarations {
			if len(fd.Parameters) == 0 || string(fd.Parameters) == "null" {
				continue
			}
			at := fmt.Sprintf("tools[%d].function_declarations[%d].parameters", i, j)
			if err := ValidateGeminiSchema(at, fd.Parameters); err != nil {
				return gmInvalid("%s", err.Error())
			}
		}
	}
	return nil
}

// schemaRefusal is the message Gemini's API words a schema refusal in,
// capitals and full stops included, as the simulator answers it.
type schemaRefusal string

func (r schemaRefusal) Error() string { return string(r) }

func refusal(format string, args ...any) error { return schemaRefusal(fmt.Sprintf(format, args...)) }
