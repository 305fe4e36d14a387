package specs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchyard/switchyard/filters/filterspec"
)

// Table renders the filters as the Markdown table configs/README.md shows:
// each filter in the order it runs, what it needs on the same route, and
// its arguments.
func Table() string {
	var b strings.Builder
	b.WriteString("| filter | order | needs on the route | arguments (default) |\n|---|---:|---|---|\n")
	for _, d := range All {
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s |\n", d.Name, d.Order, needs(d), args(d))
	}
	return b.String()
}

// needs lists what a route must also list for d: the filters that
// originate what it needs, and its other requirements with their reasons.
func needs(d *filterspec.Decl) string {
	var out []string
	for _, name := range filterspec.Missing(d, map[string]bool{}, All) {
		why := fieldsFrom(d, name)
		for _, r := range d.Requires {
			if r.Filter == name {
				why = r.Why
			}
		}
		out = append(out, fmt.Sprintf("`%s` (%s)", name, why))
	}
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, "; ")
}

func args(d *filterspec.Decl) string {
	if len(d.Args) == 0 {
		return "none"
	}
	var out []string
	for _, a := range d.Args {
		out = append(out, fmt.Sprintf("`%s` %s (%s): %s", a.Name, a.Type, a.Default, a.Meaning))
	}
	return strings.Join(out, "<br>")
}

// fieldsFrom names the fields d needs that the filter name originates.
func fieldsFrom(d *filterspec.Decl, name string) string {
	var fields []string
	for _, u := range d.Uses {
		if u.Provides || u.Optional || slices.Contains(fields, string(u.Field)) {
			continue
		}
		if slices.Contains(filterspec.Origins(u.Field, All), name) {
			fields = append(fields, string(u.Field))
		}
	}
	return "for " + strings.Join(fields, ", ")
}
