package policy

import (
	"fmt"
	"sort"

	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/filters/specs"
)

// The filters a route may list declare themselves (filters/<name>/
// <name>spec, listed by filters/specs): where they run, what they provide
// and need, what else they require and their arguments. The policy checks
// routes with those declarations alone, without linking any filter.

// FilterOrder returns a filter's position in every chain; unknown names
// sort last.
func FilterOrder(name string) int {
	if d, ok := specs.Named(name); ok {
		return d.Order
	}
	return 1 << 30
}

// KnownFilter reports whether the policy language has a filter of that name.
func KnownFilter(name string) bool {
	_, ok := specs.Named(name)
	return ok
}

func filterNames() []string {
	names := specs.Names()
	sort.Strings(names)
	return names
}

// filterProblems checks one entry of a route's filter list against the
// declarations: the name known, the filters it needs listed on the route,
// its arguments well formed. It returns the reasons, none when the entry
// is good.
func filterProblems(r FilterRef, listed map[string]bool) []string {
	d, ok := specs.Named(r.Name)
	if !ok {
		return []string{fmt.Sprintf("unknown filter %q (known: %v)", r.Name, filterNames())}
	}
	var probs []string
	for _, need := range filterspec.Missing(d, listed, specs.All) {
		probs = append(probs, fmt.Sprintf("filter %q needs filter %q on the same route", r.Name, need))
	}
	if err := d.CheckArgs(r); err != nil {
		probs = append(probs, err.Error())
	}
	return probs
}
