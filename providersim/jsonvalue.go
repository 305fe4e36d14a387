package providersim

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The simulated model's JSON (tool arguments and structured replies) is
// built from the schema the client sent: a placeholder for each required
// property, so a client that validates what it gets back finds every
// required field of the right type.

// maxSchemaDepth bounds the walk through nested and recursive ($ref)
// schemas; deeper objects are left empty.
const maxSchemaDepth = 8

// schemaNode is one schema object, read lazily: only the keywords the
// placeholder rules use are ever decoded.
type schemaNode map[string]json.RawMessage

func parseNode(raw json.RawMessage) schemaNode {
	var n schemaNode
	_ = json.Unmarshal(raw, &n) // anything but an object is no schema: nil
	return n
}

func (n schemaNode) list(key string) []json.RawMessage {
	var l []json.RawMessage
	_ = json.Unmarshal(n[key], &l) // a keyword of the wrong shape is absent
	return l
}

// typ is the node's type in lower case (Gemini's OpenAPI schemas spell
// types in upper case); of a list of types, the first decides.
func (n schemaNode) typ() string {
	var t string
	if json.Unmarshal(n["type"], &t) != nil {
		var ts []string
		if json.Unmarshal(n["type"], &ts) == nil && len(ts) > 0 {
			t = ts[0]
		}
	}
	return strings.ToLower(t)
}

// hasProperties reports whether the node describes an object's fields,
// whatever its type says.
func (n schemaNode) hasProperties() bool {
	return len(n["properties"]) > 0 || len(n["required"]) > 0
}

// schemaWalker resolves references against the schema it started from.
type schemaWalker struct{ root json.RawMessage }

// resolve follows $ref and takes the first branch of anyOf, oneOf and
// allOf, so the placeholder satisfies at least that branch.
func (w schemaWalker) resolve(n schemaNode) schemaNode {
	for range maxSchemaDepth {
		if n == nil {
			return nil
		}
		var ref string
		if json.Unmarshal(n["$ref"], &ref) == nil && ref != "" {
			n = parseNode(w.pointer(ref))
			continue
		}
		if n["type"] != nil || n.hasProperties() {
			return n
		}
		branched := false
		for _, key := range []string{"anyOf", "oneOf", "allOf"} {
			if alts := n.list(key); len(alts) > 0 {
				n, branched = parseNode(alts[0]), true
				break
			}
		}
		if !branched {
			return n
		}
	}
	return n
}

// pointer resolves a local reference ("#/$defs/Name"); others resolve to
// nothing.
func (w schemaWalker) pointer(ref string) json.RawMessage {
	path, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	cur := w.root
	for _, tok := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		cur = parseNode(cur)[tok]
		if cur == nil {
			return nil
		}
	}
	return cur
}

// value is a placeholder satisfying n: its first enum value or its const,
// else by type: string "x", number/integer 1, boolean true, array [],
// null, or an object of its required properties.
func (w schemaWalker) value(n schemaNode, depth int) []byte {
	n = w.resolve(n)
	if enum := n.list("enum"); len(enum) > 0 {
		return compactJSON(enum[0])
	}
	if c, ok := n["const"]; ok {
		return compactJSON(c)
	}
	switch n.typ() {
	case "object":
		return w.object(n, depth)
	case "number", "integer":
		return []byte("1")
	case "boolean":
		return []byte("true")
	case "array":
		return []byte("[]")
	case "null":
		return []byte("null")
	case "":
		if n.hasProperties() {
			return w.object(n, depth)
		}
	}
	return []byte(`"x"`)
}

// object holds a placeholder for each required property of n, in the
// order listed.
func (w schemaWalker) object(n schemaNode, depth int) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	if depth < maxSchemaDepth {
		var required []string
		_ = json.Unmarshal(n["required"], &required) // unreadable: nothing required
		props := parseNode(n["properties"])
		for i, name := range required {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsonString(name))
			b.WriteByte(':')
			b.Write(w.value(parseNode(props[name]), depth+1))
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// argsFromSchema builds tool-call arguments for a tool's parameter schema:
// always an object, since tool arguments are one.
func argsFromSchema(schema json.RawMessage) []byte {
	w := schemaWalker{root: schema}
	return w.object(w.resolve(parseNode(schema)), 0)
}

// jsonReply is the reply text in JSON mode: a value satisfying the
// requested schema, or, when the schema says nothing of the object's
// fields (or there is none), {"reply": text}.
func jsonReply(schema json.RawMessage, text string) string {
	w := schemaWalker{root: schema}
	n := w.resolve(parseNode(schema))
	if t := n.typ(); (t == "" || t == "object") && !n.hasProperties() && n.list("enum") == nil {
		return `{"reply":` + string(jsonString(text)) + `}`
	}
	return string(w.value(n, 0))
}

// jsonString encodes s as a JSON string without escaping <, > and &,
// as the providers send text.
func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// compactJSON drops the insignificant whitespace of a value taken from the
// request, so replies are the same bytes however the client spaced it.
func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
