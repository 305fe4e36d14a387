package filters

import (
	"fmt"

	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/filters/specs"
)

// checkFlow checks a chain's filters against their declarations
// (filters/specs): every field a filter needs is provided by an earlier
// step.
func checkFlow(fs []Filter) error {
	decls := make([]*filterspec.Decl, 0, len(fs))
	for _, f := range fs {
		d, ok := specs.Named(f.Name())
		if !ok {
			return fmt.Errorf("filter %q has no declaration in filters/specs", f.Name())
		}
		decls = append(decls, d)
	}
	return filterspec.CheckFlow(decls)
}
