package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// schemaKeywords are the fields of Gemini's Schema, a subset of OpenAPI
// 3.0. The API refuses any other field ("Unknown name ..."), so the
// declarations of function tools keep these and drop the rest.
var schemaKeywords = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true,
	"enum": true, "maxItems": true, "minItems": true, "properties": true, "required": true,
	"minProperties": true, "maxProperties": true, "minLength": true, "maxLength": true,
	"pattern": true, "example": true, "anyOf": true, "propertyOrdering": true,
	"default": true, "items": true, "minimum": true, "maximum": true,
}

// schemaFormats are the formats Gemini accepts, by type.
var schemaFormats = map[string]map[string]bool{
	"string":  {"enum": true, "date-time": true},
	"number":  {"float": true, "double": true},
	"integer": {"int32": true, "int64": true},
}

// Inlining $refs can grow a schema exponentially (definitions d0…d30, each
// with two properties that $ref the next, expand to 2^30 nodes from 2 KB),
// so nesting, the nodes built and the bytes of the definitions inlined are
// bounded across all the tools of one request, and a schema beyond them is
// refused before it costs more than the bound.
const (
	maxSchemaDepth = 64
	maxSchemaNodes = 20_000
	maxSchemaBytes = 1 << 20
)

// schemaBudget is what the tools of one request may still spend.
type schemaBudget struct {
	nodes, bytes int
}

func newSchemaBudget() *schemaBudget {
	return &schemaBudget{nodes: maxSchemaNodes, bytes: maxSchemaBytes}
}

var (
	errSchemaNodes = fmt.Errorf("parameters expand to more than %d schema nodes (count each inlined $ref in full)", maxSchemaNodes)
	errSchemaBytes = fmt.Errorf("parameters expand to more than %d bytes of inlined $ref definitions", maxSchemaBytes)
)

// cleanParameters turns a tool's JSON Schema into Gemini's Schema: local
// $refs are inlined, unsupported keywords dropped, and a parameter object
// without properties is left out (Gemini refuses an OBJECT without
// properties; a function without parameters takes no arguments).
func cleanParameters(raw json.RawMessage, budget *schemaBudget) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // keep bounds and defaults exactly as sent
	var root any
	if err := d.Decode(&root); err != nil {
		return nil, errors.New("parameters must be a JSON Schema object")
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return nil, errors.New("parameters must be a JSON Schema object")
	}
	if t, ok := obj["type"]; ok && t != "object" {
		return nil, errors.New(`parameters must be a schema of type "object"`)
	}
	c := schemaCleaner{defs: map[string]definition{}, budget: budget}
	for _, key := range []string{"definitions", "$defs"} {
		if m, ok := obj[key].(map[string]any); ok {
			for name, def := range m {
				// Its encoded size is what each inlining of it costs; the
				// sum is bounded by the request's size.
				b, err := json.Marshal(def)
				if err != nil {
					return nil, err
				}
				c.defs["#/"+key+"/"+name] = definition{def, len(b)}
			}
		}
	}
	cleaned, err := c.clean(obj, 0, nil)
	if err != nil {
		return nil, err
	}
	if props, _ := cleaned["properties"].(map[string]any); len(props) == 0 {
		return nil, nil
	}
	cleaned["type"] = "object" // OpenAI lets clients leave it out; Gemini needs it
	return json.Marshal(cleaned)
}

type schemaCleaner struct {
	defs   map[string]definition // "#/$defs/name" → schema
	budget *schemaBudget
}

type definition struct {
	schema any
	size   int // bytes, encoded
}

func (c *schemaCleaner) clean(node any, depth int, refs []string) (map[string]any, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("parameters nest deeper than %d levels", maxSchemaDepth)
	}
	if c.budget.nodes--; c.budget.nodes < 0 {
		return nil, errSchemaNodes
	}
	obj, ok := node.(map[string]any)
	if !ok {
		return nil, errors.New("parameters may hold only object schemas (boolean schemas are not supported)")
	}
	if ref, ok := obj["$ref"].(string); ok {
		return c.resolve(obj, ref, depth, refs)
	}
	out := map[string]any{}
	// Sorted keys make the output deterministic where keywords interact:
	// allOf merges first and its siblings override it; enum overrides const.
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := obj[k]
		switch k {
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, errors.New("properties must be an object")
			}
			cleaned := map[string]any{}
			for name, p := range props {
				s, err := c.clean(p, depth+1, refs)
				if err != nil {
					return nil, err
				}
				cleaned[name] = s
			}
			if len(cleaned) > 0 {
				out[k] = cleaned
			}
		case "items":
			s, err := c.clean(v, depth+1, refs)
			if err != nil {
				return nil, err
			}
			out[k] = s
		case "anyOf", "oneOf":
			// oneOf becomes anyOf: Gemini has no exclusive choice, and a
			// value valid for exactly one branch is valid for at least one.
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s must be an array", k)
			}
			var branches []any
			for _, b := range list {
				s, err := c.clean(b, depth+1, refs)
				if err != nil {
					return nil, err
				}
				branches = append(branches, s)
			}
			out["anyOf"] = branches
		case "allOf":
			list, ok := v.([]any)
			if !ok || len(list) != 1 {
				return nil, errors.New("allOf is supported with a single schema only")
			}
			s, err := c.clean(list[0], depth+1, refs)
			if err != nil {
				return nil, err
			}
			for sk, sv := range s {
				out[sk] = sv
			}
		case "type":
			if err := cleanType(v, out); err != nil {
				return nil, err
			}
		case "const":
			s, ok := v.(string)
			if !ok {
				return nil, errors.New("const is supported for strings only")
			}
			out["enum"], out["type"] = []any{s}, "string" // a later "type" key overrides
		default:
			if schemaKeywords[k] {
				out[k] = v
			}
		}
	}
	if f, ok := out["format"].(string); ok {
		t, _ := out["type"].(string)
		if !schemaFormats[t][f] {
			delete(out, "format")
		}
	}
	return out, nil
}

// resolve inlines a local $ref. A description beside the $ref describes
// this use of the definition, so it wins over the definition's own.
func (c *schemaCleaner) resolve(obj map[string]any, ref string, depth int, refs []string) (map[string]any, error) {
	def, ok := c.defs[ref]
	if !ok {
		return nil, fmt.Errorf("$ref %q does not point into this schema's $defs or definitions", ref)
	}
	for _, r := range refs {
		if r == ref {
			return nil, fmt.Errorf("$ref %q is recursive, which this model cannot express", ref)
		}
	}
	if c.budget.bytes -= def.size; c.budget.bytes < 0 {
		return nil, errSchemaBytes
	}
	s, err := c.clean(def.schema, depth+1, append(refs, ref))
	if err != nil {
		return nil, err
	}
	if d, ok := obj["description"]; ok {
		s["description"] = d
	}
	return s, nil
}

// cleanType maps JSON Schema's type to Gemini's: one type name, with
// ["T","null"] expressed as nullable.
func cleanType(v any, out map[string]any) error {
	switch t := v.(type) {
	case string:
		if t == "null" {
			return errors.New(`type "null" alone is not supported`)
		}
		out["type"] = t
		return nil
	case []any:
		var types []string
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return errors.New("type must be a string or an array of strings")
			}
			if s == "null" {
				out["nullable"] = true
				continue
			}
			types = append(types, s)
		}
		if len(types) != 1 {
			return fmt.Errorf("type [%s] is not supported: use one type (optionally with \"null\") or anyOf", strings.Join(types, ", "))
		}
		out["type"] = types[0]
		return nil
	default:
		return errors.New("type must be a string or an array of strings")
	}
}
