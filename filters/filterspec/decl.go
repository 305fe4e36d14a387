// Package filterspec is how a filter declares itself to the policy: its
// name, where it runs, the Exchange fields it provides and needs, the
// filters it requires beyond those, and its arguments. Each filter writes
// its declaration once, in a small package of its own (filters/<name>/
// <name>spec) that its behaviour imports; the policy's validation, the
// chain's flow check and the README's argument table all read it, and xds
// links the declarations without linking any filter's behaviour.
package filterspec

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Ref is a filter named by a route, with its arguments still raw: the
// filter's declaration decodes them.
type Ref struct {
	Name      string
	Shorthand []string
	Args      map[string]any
	// Where locates the entry for error messages: file:line:col: field.
	Where string
}

// Decl is a filter's declaration.
type Decl struct {
	Name string
	// Order fixes where the filter runs in every chain: request hooks
	// ascend it, response hooks descend it. It is the plugin.cfg of the
	// project, never the policy's to change.
	Order int
	// Uses are the Exchange fields the filter provides and needs, per
	// phase. A field it needs makes a filter that provides it required on
	// the same route.
	Uses []Use
	// Requires names filters the route must also list for reasons other
	// than data flow, each with its reason.
	Requires []Requirement
	// Args documents the filter's arguments (none: it takes none).
	Args []Arg
	// Check validates an entry's arguments; nil refuses any.
	Check func(Ref) error
}

// Requirement is a filter a route must also list, and why.
type Requirement struct {
	Filter string
	Why    string
}

// Arg documents one argument of a filter.
type Arg struct {
	Name, Type, Default, Meaning string
}

// CheckArgs validates an entry's arguments against the declaration.
func (d *Decl) CheckArgs(r Ref) error {
	if d.Check == nil {
		return NoArgs(r)
	}
	return d.Check(r)
}

// Parsed makes a declaration's Check of the parser of its arguments.
func Parsed[T any](parse func(Ref) (T, error)) func(Ref) error {
	return func(r Ref) error {
		_, err := parse(r)
		return err
	}
}

// NoArgs refuses arguments for a filter that takes none.
func NoArgs(r Ref) error {
	if len(r.Shorthand) > 0 || len(r.Args) > 0 {
		return fmt.Errorf("filter %q takes no arguments", r.Name)
	}
	return nil
}

// DecodeArgs decodes an entry's arguments into spec, refusing any field
// spec does not have; known lists the fields for the error.
func DecodeArgs(ref Ref, known string, spec any) error {
	raw, err := yaml.Marshal(ref.Args)
	if err != nil {
		return fmt.Errorf("%s args: %w", ref.Name, err)
	}
	d := yaml.NewDecoder(bytes.NewReader(raw))
	d.KnownFields(true)
	if err := d.Decode(spec); err != nil {
		// yaml names the Go type a field is missing from, which says
		// nothing to whoever wrote the policy.
		msg := notFoundIn.ReplaceAllString(err.Error(), "unknown field $1")
		return fmt.Errorf("%s args (known: %s): %s", ref.Name, known, msg)
	}
	return nil
}

var notFoundIn = regexp.MustCompile(`field (\S+) not found in type \S+`)

// Missing lists, for one filter of a route, the filters it needs that the
// route does not list: those its Requires name, and for each field it
// needs (not only reads), the filters that originate that field when
// none of them is listed. listed names the route's filters; all are every
// declaration. A field's origins are the filters that provide it without
// reading it in the same phase: one that rewrites a field it reads (quota
// narrowing a plan) is not where the field comes from.
func Missing(d *Decl, listed map[string]bool, all []*Decl) []string {
	var out []string
	add := func(name string) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, u := range d.Uses {
		if u.Provides || u.Optional {
			continue
		}
		origins := Origins(u.Field, all)
		found := len(origins) == 0
		for _, o := range origins {
			// the filter itself (it provides the field in an earlier
			// phase), one the route lists, or one already named missing
			if o == d.Name || listed[o] || slices.Contains(out, o) {
				found = true
			}
		}
		if !found {
			add(origins[0])
		}
	}
	for _, r := range d.Requires {
		if !listed[r.Filter] {
			add(r.Filter)
		}
	}
	return out
}

// Origins names, in declaration order, the filters that originate field f.
func Origins(f Field, all []*Decl) []string {
	var out []string
	for _, d := range all {
		reads := map[Phase]bool{}
		for _, u := range d.Uses {
			if !u.Provides && u.Field == f {
				reads[u.Phase] = true
			}
		}
		for _, u := range d.Uses {
			if u.Provides && u.Field == f && !reads[u.Phase] {
				out = append(out, d.Name)
				break
			}
		}
	}
	return out
}
