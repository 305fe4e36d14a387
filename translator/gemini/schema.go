package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
)

// Tool parameters go to Gemini's functionDeclarations[].parameters, a
// Schema message that holds a subset of OpenAPI 3.0 and refuses any other
// field. A JSON Schema is lowered into it: what the Schema can hold is
// kept, what it cannot is merged (allOf, $ref), rewritten into an
// equivalent (oneOf, const, type lists, exclusive integer bounds) or
// relaxed into the description, where the model still reads it (a second
// pattern, a format Gemini does not know). Relaxing never makes a valid
// call invalid: the schema only guides the model, and the client still
// validates the arguments it gets. README.md lists every rule.

// Inlining $refs can grow a schema exponentially (definitions d0…d30, each
// with two properties that $ref the next, expand to 2^30 nodes from 2 KB),
// so nesting, the nodes built and the bytes of the definitions inlined are
// bounded across all the tools of one request, and a schema beyond them is
// refused before it costs more than the bound.
const (
	maxSchemaDepth = 64
	maxSchemaNodes = 20_000
	maxSchemaBytes = 1 << 20
	// anyNodes is what one value of any type costs: it is written out as
	// an anyOf of every type (Gemini has no "any").
	anyNodes = 12
)

// schemaBudget is what the tools of one request may still spend.
type schemaBudget struct {
	nodes, bytes int
}

func newSchemaBudget() *schemaBudget {
	return &schemaBudget{nodes: maxSchemaNodes, bytes: maxSchemaBytes}
}

var (
	errSchemaNodes = fmt.Errorf("expands to more than %d schema nodes (each inlined $ref counts in full)", maxSchemaNodes)
	errSchemaBytes = fmt.Errorf("expands to more than %d bytes of inlined $ref definitions", maxSchemaBytes)
)

// schemaError names where in the parameters schema a keyword cannot be
// lowered.
type schemaError struct {
	at  string // path below parameters (".properties.a.allOf[1]"), "" for parameters itself
	err error
}

func (e *schemaError) Error() string {
	if e.at == "" {
		return e.err.Error()
	}
	return strings.TrimPrefix(e.at, ".") + ": " + e.err.Error()
}

func (e *schemaError) Unwrap() error { return e.err }

func errAt(at, format string, args ...any) error {
	return &schemaError{at: at, err: fmt.Errorf(format, args...)}
}

// cleanParameters lowers a tool's JSON Schema into Gemini's Schema. A
// parameter object without properties is left out (Gemini refuses an
// OBJECT without properties there; a function without parameters takes
// no arguments).
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
	c := schemaCleaner{root: obj, sizes: map[string]int{}, budget: budget}
	l, err := c.lower(obj, "", 0, []string{""})
	if err != nil {
		return nil, err
	}
	if l.types != nil && !slices.Equal(l.types, []string{"object"}) {
		return nil, errors.New(`parameters must be a schema of type "object"`)
	}
	if err := flattenUnion(l); err != nil {
		return nil, err
	}
	if len(l.props) == 0 {
		return nil, nil
	}
	// OpenAI lets clients leave the type out; Gemini needs it.
	l.types, l.nullable = []string{"object"}, false
	out, err := c.finalize(l, "", "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// flattenUnion turns parameters that are a union of object shapes (a
// top-level anyOf/oneOf, as zod's discriminated unions make) into one
// object: every property of every shape, required only where all shapes
// require it. Gemini's parameters must be one OBJECT with properties; the
// union's constraint between properties is relaxed, not dropped silently:
// each shape stays in the description.
func flattenUnion(l *lowered) error {
	if l.anyOf == nil {
		return nil
	}
	var required, sets []string
	for i, b := range l.anyOf {
		if b.types != nil && !slices.Equal(b.types, []string{"object"}) {
			return errAt(fmt.Sprintf(".anyOf[%d]", i), `parameters must be a schema of type "object"`)
		}
		if l.props == nil {
			l.props = map[string]*lowered{}
		}
		names := slices.Sorted(maps.Keys(b.props))
		for _, name := range names {
			if _, ok := l.props[name]; !ok {
				l.props[name] = b.props[name]
			}
		}
		req, _ := b.kw["required"].([]string)
		if i == 0 {
			required = req
		} else {
			required = slices.DeleteFunc(required, func(s string) bool { return !slices.Contains(req, s) })
		}
		var set []string
		if len(names) > 0 {
			set = append(set, "arguments "+strings.Join(names, ", "))
		}
		if len(req) > 0 {
			set = append(set, "requiring "+strings.Join(req, ", "))
		}
		if len(set) > 0 {
			sets = append(sets, strings.Join(set, " "))
		}
	}
	if len(sets) > 0 {
		l.note("Takes one of these argument sets: " + strings.Join(sets, "; or ") + ".")
	}
	l.anyOf = nil
	own, _ := l.kw["required"].([]string)
	l.kw["required"] = union(own, required)
	return nil
}

type schemaCleaner struct {
	root   map[string]any
	sizes  map[string]int // encoded bytes of each $ref target, by pointer
	budget *schemaBudget
}

// lowered is a JSON Schema read into what Gemini's Schema can say, not yet
// written out: allOf parts and $ref targets merge into it first.
type lowered struct {
	types    []string // allowed types other than null; nil when the schema does not constrain the type
	nullable bool     // null is allowed besides types
	desc     string
	notes    []string       // constraints Gemini cannot hold, written into the description for the model
	kw       map[string]any // the other Schema fields: title, default, example, enum, format, pattern, bounds, required, propertyOrdering
	props    map[string]*lowered
	items    *lowered
	anyOf    []*lowered
}

func (l *lowered) note(s string) {
	if !slices.Contains(l.notes, s) {
		l.notes = append(l.notes, s)
	}
}

// nullOnly reports a schema that allows null and nothing else.
func (l *lowered) nullOnly() bool {
	return l.types != nil && len(l.types) == 0 && l.nullable
}

// allowsNull reports whether null passes the schema's type constraint.
func (l *lowered) allowsNull() bool { return l.types == nil || l.nullable }

func (c *schemaCleaner) lower(node any, at string, depth int, refs []string) (*lowered, error) {
	if depth > maxSchemaDepth {
		return nil, errAt(at, "nests deeper than %d levels", maxSchemaDepth)
	}
	if c.budget.nodes--; c.budget.nodes < 0 {
		return nil, errAt(at, "%w", errSchemaNodes)
	}
	switch n := node.(type) {
	case bool:
		if n {
			return &lowered{kw: map[string]any{}}, nil // true: any value
		}
		return nil, errAt(at, "the schema false (no value is valid) cannot be expressed")
	case map[string]any:
		l, err := c.keywords(n, at, depth, refs)
		if err != nil {
			return nil, err
		}
		// Since draft 2019-09 the keywords beside a $ref apply too: the
		// target is one more part to merge. The node's own annotations
		// win, so a description beside the $ref describes this use.
		if ref, ok := n["$ref"]; ok {
			s, ok := ref.(string)
			if !ok {
				return nil, errAt(at+".$ref", "must be a string")
			}
			r, err := c.resolve(s, at+".$ref", depth, refs)
			if err != nil {
				return nil, err
			}
			if err := l.merge(r, at); err != nil {
				return nil, err
			}
		}
		if all, ok := n["allOf"]; ok {
			list, ok := all.([]any)
			if !ok {
				return nil, errAt(at+".allOf", "must be an array")
			}
			for i, sub := range list {
				p := fmt.Sprintf("%s.allOf[%d]", at, i)
				s, err := c.lower(sub, p, depth+1, refs)
				if err != nil {
					return nil, err
				}
				if err := l.merge(s, p); err != nil {
					return nil, err
				}
			}
		}
		return l, nil
	default:
		return nil, errAt(at, "must be a JSON Schema object")
	}
}

// resolve inlines a local $ref: a JSON pointer into this schema
// (#/$defs/x, #/definitions/x, #/properties/a…). A reference back into a
// definition being inlined is cut there: Gemini's Schema cannot recur, so
// the nested level says, in its description, that it has the same shape.
func (c *schemaCleaner) resolve(ref, at string, depth int, refs []string) (*lowered, error) {
	pointer, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, errAt(at, "%q points outside this schema; only local references (#/…) can be inlined", ref)
	}
	if p, err := url.PathUnescape(pointer); err == nil {
		pointer = p
	}
	target, ok := c.lookup(pointer)
	if !ok {
		return nil, errAt(at, "%q points to nothing in this schema", ref)
	}
	if slices.Contains(refs, pointer) {
		cut := &lowered{kw: map[string]any{}}
		if obj, ok := target.(map[string]any); ok {
			if t, ok := obj["type"].(string); ok && t != "null" {
				cut.types = []string{t}
			}
			cut.desc, _ = obj["description"].(string)
		}
		cut.note(fmt.Sprintf("Has the same structure as %s again (recursive; not expanded further).", refName(pointer)))
		return cut, nil
	}
	size, ok := c.sizes[pointer]
	if !ok {
		b, err := json.Marshal(target)
		if err != nil {
			return nil, errAt(at, "%q cannot be encoded", ref)
		}
		size = len(b)
		c.sizes[pointer] = size
	}
	if c.budget.bytes -= size; c.budget.bytes < 0 {
		return nil, errAt(at, "%w", errSchemaBytes)
	}
	return c.lower(target, at, depth+1, append(refs, pointer))
}

// lookup follows a JSON pointer (RFC 6901) from the schema's root.
func (c *schemaCleaner) lookup(pointer string) (any, bool) {
	var cur any = c.root
	if pointer == "" {
		return cur, true
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, false // an anchor (#name), which needs $anchor support
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			var i int
			if _, err := fmt.Sscan(tok, &i); err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// refName is the last token of a pointer: the definition's name.
func refName(pointer string) string {
	if pointer == "" {
		return "the whole parameters object"
	}
	return pointer[strings.LastIndex(pointer, "/")+1:]
}

// keywords reads a schema object's own keywords ($ref and allOf aside).
// Keywords without a Gemini equivalent and without a bearing on which
// arguments are valid ($schema, $id, $comment, examples beyond the first,
// readOnly…) are dropped, and so are the ones that only loosen when
// dropped (not, if/then/else, additionalProperties, propertyNames,
// patternProperties, dependencies, contains).
func (c *schemaCleaner) keywords(n map[string]any, at string, depth int, refs []string) (*lowered, error) {
	l := &lowered{kw: map[string]any{}}
	if t, ok := n["type"]; ok {
		if err := l.setType(t); err != nil {
			return nil, errAt(at+".type", "%v", err)
		}
	}
	if b, _ := n["nullable"].(bool); b {
		l.nullable = true // OpenAPI's spelling
	}
	l.desc, _ = n["description"].(string)
	if s, ok := n["title"].(string); ok {
		l.kw["title"] = s
	}
	if v, ok := n["default"]; ok {
		l.kw["default"] = v
	}
	if v, ok := n["example"]; ok {
		l.kw["example"] = v
	} else if ex, ok := n["examples"].([]any); ok && len(ex) > 0 {
		l.kw["example"] = ex[0]
	}
	if err := l.values(n, at); err != nil {
		return nil, err
	}
	for _, k := range []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"} {
		if v, ok := n[k]; ok {
			count, ok := v.(json.Number)
			if _, err := count.Int64(); !ok || err != nil {
				return nil, errAt(at+"."+k, "must be an integer")
			}
			l.kw[k] = count
		}
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
		switch v := n[k].(type) {
		case nil:
		case json.Number:
			if _, err := v.Float64(); err != nil {
				return nil, errAt(at+"."+k, "must be a number")
			}
			if k == "multipleOf" {
				l.note(fmt.Sprintf("Must be a multiple of %s.", v))
			} else {
				l.kw[k] = v
			}
		case bool:
			// Draft 4: exclusiveMinimum: true makes minimum exclusive.
			bound, ok := map[string]string{"exclusiveMinimum": "minimum", "exclusiveMaximum": "maximum"}[k]
			if m, isNum := n[bound].(json.Number); ok && isNum && v {
				l.kw[k] = m
				delete(l.kw, bound)
			}
		default:
			return nil, errAt(at+"."+k, "must be a number")
		}
	}
	if p, ok := n["pattern"].(string); ok {
		l.kw["pattern"] = p
	}
	if f, ok := n["format"].(string); ok {
		l.kw["format"] = f
	}
	if err := c.arrayKeywords(l, n, at, depth, refs); err != nil {
		return nil, err
	}
	if err := c.objectKeywords(l, n, at, depth, refs); err != nil {
		return nil, err
	}
	return l, c.unions(l, n, at, depth, refs)
}

// setType reads type: one name or a list; "null" in it means nullable.
func (l *lowered) setType(t any) error {
	var names []any
	switch t := t.(type) {
	case string:
		names = []any{t}
	case []any:
		names = t
	default:
		return errors.New("must be a string or an array of strings")
	}
	l.types = []string{}
	for _, v := range names {
		s, _ := v.(string)
		switch s {
		case "null":
			l.nullable = true
		case "string", "number", "integer", "boolean", "array", "object":
			if !slices.Contains(l.types, s) {
				l.types = append(l.types, s)
			}
		default:
			return fmt.Errorf("%v is not a JSON Schema type", v)
		}
	}
	return nil
}

// values reads enum and const. Gemini's enum holds strings only: other
// values are listed in the description instead, with the type they imply.
func (l *lowered) values(n map[string]any, at string) error {
	list, ok := n["enum"].([]any)
	key := "enum"
	if !ok {
		if _, hasEnum := n["enum"]; hasEnum {
			return errAt(at+".enum", "must be an array")
		}
		v, ok := n["const"]
		if !ok {
			return nil
		}
		list, key = []any{v}, "const"
	}
	var strs []string
	var shown []string
	var kinds []string
	hasNull, others := false, false
	for _, v := range list {
		b, _ := json.Marshal(v) // decoded JSON always encodes
		shown = append(shown, string(b))
		switch v := v.(type) {
		case nil:
			hasNull = true
			continue
		case string:
			strs = append(strs, v)
		default:
			others = true
		}
		if k := valueType(v); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if l.types == nil && len(list) > 0 {
		l.types, l.nullable = append([]string{}, kinds...), hasNull
	}
	switch {
	case !others && len(strs) > 0:
		l.kw["enum"] = strs
	case key == "const":
		l.note(fmt.Sprintf("Always %s.", shown[0]))
	default:
		l.note(fmt.Sprintf("One of: %s.", strings.Join(shown, ", ")))
	}
	return nil
}

// valueType is the JSON Schema type of a decoded JSON value.
func valueType(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	default:
		return "object"
	}
}

func (c *schemaCleaner) arrayKeywords(l *lowered, n map[string]any, at string, depth int, refs []string) error {
	var tuple []any
	switch items := n["items"].(type) {
	case nil:
	case []any: // draft 4's tuple form
		tuple = items
	default:
		s, err := c.lower(items, at+".items", depth+1, refs)
		if err != nil {
			return err
		}
		l.items = s
	}
	if p, ok := n["prefixItems"].([]any); ok {
		tuple = p
	}
	if len(tuple) > 0 {
		// Gemini has one items schema: a tuple's positions become the
		// choices of every item.
		u := &lowered{kw: map[string]any{}}
		for i, sub := range tuple {
			s, err := c.lower(sub, fmt.Sprintf("%s.prefixItems[%d]", at, i), depth+1, refs)
			if err != nil {
				return err
			}
			u.anyOf = append(u.anyOf, s)
		}
		if l.items != nil {
			u.anyOf = append(u.anyOf, l.items)
		}
		if len(u.anyOf) == 1 {
			u = u.anyOf[0]
		}
		l.items = u
	}
	if b, _ := n["uniqueItems"].(bool); b {
		l.note("Items must be unique.")
	}
	return nil
}

func (c *schemaCleaner) objectKeywords(l *lowered, n map[string]any, at string, depth int, refs []string) error {
	if v, ok := n["properties"]; ok {
		props, ok := v.(map[string]any)
		if !ok {
			return errAt(at+".properties", "must be an object")
		}
		l.props = map[string]*lowered{}
		for _, name := range slices.Sorted(maps.Keys(props)) {
			s, err := c.lower(props[name], at+".properties."+name, depth+1, refs)
			if err != nil {
				return err
			}
			l.props[name] = s
		}
	}
	if req, ok := n["required"].([]any); ok {
		var names []string
		for _, v := range req {
			if s, ok := v.(string); ok && !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
		l.kw["required"] = names
	}
	if order, ok := n["propertyOrdering"].([]any); ok {
		var names []string
		for _, v := range order {
			if s, ok := v.(string); ok {
				names = append(names, s)
			}
		}
		l.kw["propertyOrdering"] = names
	}
	// A map (an object whose keys are free) cannot be described by
	// properties; the model is told what its values are.
	if ap, ok := n["additionalProperties"].(map[string]any); ok && len(l.props) == 0 {
		if t, ok := ap["type"].(string); ok {
			l.note(fmt.Sprintf("Any keys, each value of type %s.", t))
		}
	}
	return nil
}

// unions reads anyOf and oneOf. oneOf becomes anyOf: Gemini has no
// exclusive choice, and a value valid for exactly one branch is valid for
// at least one. A null branch makes the others nullable; a single branch
// left merges into the node.
func (c *schemaCleaner) unions(l *lowered, n map[string]any, at string, depth int, refs []string) error {
	for _, key := range []string{"anyOf", "oneOf"} {
		v, ok := n[key]
		if !ok {
			continue
		}
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return errAt(at+"."+key, "must be a non-empty array")
		}
		u := &lowered{kw: map[string]any{}}
		null := false
		for i, sub := range list {
			s, err := c.lower(sub, fmt.Sprintf("%s.%s[%d]", at, key, i), depth+1, refs)
			if err != nil {
				return err
			}
			if s.nullOnly() {
				null = true
				continue
			}
			u.anyOf = append(u.anyOf, s)
		}
		switch len(u.anyOf) {
		case 0:
			u.types, u.nullable = []string{}, true
		case 1:
			u = u.anyOf[0]
			u.nullable = u.nullable || null
		default:
			u.nullable = null
		}
		if err := l.merge(u, at+"."+key); err != nil {
			return err
		}
	}
	return nil
}

// merge narrows l to the values that also pass o (allOf): types and enums
// intersect, properties and required unite, bounds tighten. l's
// annotations win. What Gemini's Schema cannot hold twice (a second
// pattern or format) goes into the description.
func (l *lowered) merge(o *lowered, at string) error {
	if o == nil {
		return nil
	}
	switch {
	case o.types == nil && o.anyOf != nil && o.nullable && l.types == nil:
		l.nullable = true // anyOf with a null branch: null passes
	case o.types == nil:
	case l.types == nil:
		l.types, l.nullable = o.types, o.nullable && l.allowsNull()
	default:
		var both []string
		for _, t := range l.types {
			if !slices.Contains(o.types, t) && (t == "number" && slices.Contains(o.types, "integer") || t == "integer" && slices.Contains(o.types, "number")) {
				t = "integer" // every integer is a number
			} else if !slices.Contains(o.types, t) {
				continue
			}
			if !slices.Contains(both, t) {
				both = append(both, t)
			}
		}
		l.types, l.nullable = both, l.nullable && o.nullable
		if len(both) == 0 && !l.nullable {
			return errAt(at, "allows no value: its parts require different types")
		}
	}
	if l.desc == "" {
		l.desc = o.desc
	}
	for _, n := range o.notes {
		l.note(n)
	}
	for _, k := range slices.Sorted(maps.Keys(o.kw)) {
		if err := l.mergeKeyword(k, o.kw[k], at); err != nil {
			return err
		}
	}
	if o.props != nil && l.props == nil {
		l.props = map[string]*lowered{}
	}
	for _, name := range slices.Sorted(maps.Keys(o.props)) {
		if mine, ok := l.props[name]; ok {
			if err := mine.merge(o.props[name], at+".properties."+name); err != nil {
				return err
			}
		} else {
			l.props[name] = o.props[name]
		}
	}
	if l.items == nil {
		l.items = o.items
	} else if err := l.items.merge(o.items, at+".items"); err != nil {
		return err
	}
	if o.anyOf != nil {
		if l.anyOf != nil {
			return errAt(at, "combines two anyOf/oneOf lists, which Gemini's schema cannot express")
		}
		l.anyOf = o.anyOf
	}
	return nil
}

func (l *lowered) mergeKeyword(k string, v any, at string) error {
	mine, ok := l.kw[k]
	if !ok {
		l.kw[k] = v
		return nil
	}
	switch k {
	case "required":
		l.kw[k] = union(mine.([]string), v.([]string))
	case "enum":
		both := slices.DeleteFunc(slices.Clone(mine.([]string)), func(s string) bool { return !slices.Contains(v.([]string), s) })
		if len(both) == 0 {
			return errAt(at, "allows no value: its parts' enums have no value in common")
		}
		l.kw[k] = both
	case "minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties":
		if num(v) > num(mine) {
			l.kw[k] = v
		}
	case "maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties":
		if num(v) < num(mine) {
			l.kw[k] = v
		}
	case "pattern":
		if v != mine {
			l.note(fmt.Sprintf("Must also match the pattern `%s`.", v))
		}
	case "format":
		if v != mine {
			l.note(fmt.Sprintf("Format: %s.", v))
		}
	}
	return nil // title, default, example, propertyOrdering: the first one
}

func num(v any) float64 {
	f, _ := v.(json.Number).Float64() // checked when read
	return f
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// schemaFormats are the formats Gemini accepts, by type.
var schemaFormats = map[string]map[string]bool{
	"string":  {"enum": true, "date-time": true},
	"number":  {"float": true, "double": true},
	"integer": {"int32": true, "int64": true},
}

// finalize writes a lowered schema out as Gemini's Schema. Every node gets
// a type (Gemini refuses a node without one unless it has anyOf): the
// declared one, else one its keywords imply, else hint (the type of the
// node whose anyOf it is in), else any type.
func (c *schemaCleaner) finalize(l *lowered, at, hint string) (map[string]any, error) {
	types := l.types
	if types == nil {
		types = impliedTypes(l, hint)
	}
	if types != nil && len(types) == 0 {
		return nil, errAt(at, `allows only null, which Gemini's schema cannot express (it has no null type)`)
	}
	notes := slices.Clone(l.notes)
	out := map[string]any{}
	for _, k := range []string{"title", "default", "example"} {
		if v, ok := l.kw[k]; ok {
			out[k] = v
		}
	}
	switch {
	case l.anyOf != nil:
		one := ""
		if len(types) == 1 {
			one = types[0]
			if err := c.typed(out, l, one, at, &notes); err != nil {
				return nil, err
			}
		}
		var branches []any
		for i, b := range l.anyOf {
			s, err := c.finalize(b, fmt.Sprintf("%s.anyOf[%d]", at, i), one)
			if err != nil {
				return nil, err
			}
			if l.nullable {
				setNullable(s)
			}
			branches = append(branches, s)
		}
		out["anyOf"] = branches
	case types == nil:
		if c.budget.nodes -= anyNodes; c.budget.nodes < 0 {
			return nil, errAt(at, "%w", errSchemaNodes)
		}
		out["anyOf"] = anyValue()
	case len(types) == 1:
		if err := c.typed(out, l, types[0], at, &notes); err != nil {
			return nil, err
		}
	default:
		var branches []any
		for _, t := range types {
			b := map[string]any{}
			if err := c.typed(b, l, t, at, &notes); err != nil {
				return nil, err
			}
			branches = append(branches, b)
		}
		out["anyOf"] = branches
	}
	if d := strings.TrimSpace(l.desc + "\n\n" + strings.Join(notes, " ")); d != "" {
		out["description"] = d
	}
	return out, nil
}

// impliedTypes is the type a schema without one must have for its
// keywords to mean anything.
func impliedTypes(l *lowered, hint string) []string {
	has := func(keys ...string) bool {
		return slices.ContainsFunc(keys, func(k string) bool { _, ok := l.kw[k]; return ok })
	}
	switch {
	case l.props != nil || has("required", "minProperties", "maxProperties", "propertyOrdering"):
		return []string{"object"}
	case l.items != nil || has("minItems", "maxItems"):
		return []string{"array"}
	case has("enum", "pattern", "minLength", "maxLength"):
		return []string{"string"}
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
		return []string{"number"}
	case hint != "":
		return []string{hint}
	}
	return nil
}

// typed writes the keywords of l that apply to type t into out. The others
// constrain only values of other types, so leaving them out changes
// nothing.
func (c *schemaCleaner) typed(out map[string]any, l *lowered, t, at string, notes *[]string) error {
	out["type"] = t
	if l.nullable {
		out["nullable"] = true
	}
	copyKw := func(keys ...string) {
		for _, k := range keys {
			if v, ok := l.kw[k]; ok {
				out[k] = v
			}
		}
	}
	switch t {
	case "string":
		copyKw("enum", "minLength", "maxLength", "pattern")
	case "number", "integer":
		copyKw("minimum", "maximum")
		exclusiveBound(out, l, t, "exclusiveMinimum", "minimum", notes)
		exclusiveBound(out, l, t, "exclusiveMaximum", "maximum", notes)
	case "array":
		copyKw("minItems", "maxItems")
		items := l.items
		if items == nil {
			items = &lowered{kw: map[string]any{}}
		}
		s, err := c.finalize(items, at+".items", "")
		if err != nil {
			return err
		}
		out["items"] = s
	case "object":
		copyKw("minProperties", "maxProperties")
		if len(l.props) > 0 {
			props := map[string]any{}
			for _, name := range slices.Sorted(maps.Keys(l.props)) {
				s, err := c.finalize(l.props[name], at+".properties."+name, "")
				if err != nil {
					return err
				}
				props[name] = s
			}
			out["properties"] = props
		}
		// Gemini refuses a required or ordered name that is not a property.
		for _, k := range []string{"required", "propertyOrdering"} {
			names, _ := l.kw[k].([]string)
			names = slices.DeleteFunc(slices.Clone(names), func(s string) bool { _, ok := l.props[s]; return !ok })
			if len(names) > 0 {
				out[k] = names
			}
		}
	}
	if f, ok := l.kw["format"].(string); ok {
		if schemaFormats[t][f] {
			out["format"] = f
		} else if t == "string" || schemaFormats[t] != nil {
			*notes = appendNote(*notes, fmt.Sprintf("Format: %s.", f))
		}
	}
	return nil
}

// exclusiveBound writes an exclusive bound: exact for integers (> 3 is
// ≥ 4), for numbers the inclusive bound plus a note.
func exclusiveBound(out map[string]any, l *lowered, t, key, bound string, notes *[]string) {
	v, ok := l.kw[key].(json.Number)
	if !ok {
		return
	}
	f := num(v)
	upper := bound == "maximum"
	if t == "integer" && math.Abs(f) < 1<<53 {
		n := math.Floor(f) + 1
		if upper {
			n = math.Ceil(f) - 1
		}
		if cur, ok := out[bound]; !ok || (upper && n < num(cur)) || (!upper && n > num(cur)) {
			out[bound] = json.Number(fmt.Sprint(int64(n)))
		}
		return
	}
	if cur, ok := out[bound]; !ok || (upper && f <= num(cur)) || (!upper && f >= num(cur)) {
		out[bound] = v
		word := map[bool]string{false: "greater", true: "less"}[upper]
		*notes = appendNote(*notes, fmt.Sprintf("Must be %s than %s.", word, v))
	}
}

func appendNote(notes []string, s string) []string {
	if slices.Contains(notes, s) {
		return notes
	}
	return append(notes, s)
}

// setNullable marks a written schema, or each branch of its anyOf, as
// allowing null.
func setNullable(s map[string]any) {
	if branches, ok := s["anyOf"].([]any); ok {
		for _, b := range branches {
			setNullable(b.(map[string]any))
		}
		return
	}
	s["nullable"] = true
}

// anyValue is a value of any type, which Gemini's schema can only list.
// Arrays hold scalars or objects: listing "any" again inside would not end.
func anyValue() []any {
	scalars := func() []any {
		return []any{
			map[string]any{"type": "string"}, map[string]any{"type": "number"},
			map[string]any{"type": "boolean"}, map[string]any{"type": "object"},
		}
	}
	return append(scalars(), map[string]any{"type": "array", "items": map[string]any{"anyOf": scalars()}})
}
