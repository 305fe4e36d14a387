// Package specs lists every filter's declaration (filters/filterspec):
// what the policy validates routes with, without linking any filter's
// behaviour.
package specs

import (
	"cmp"
	"slices"

	"github.com/switchyard/switchyard/filters/admin/adminspec"
	"github.com/switchyard/switchyard/filters/auth/authspec"
	"github.com/switchyard/switchyard/filters/cache/cachespec"
	"github.com/switchyard/switchyard/filters/catalog/catalogspec"
	"github.com/switchyard/switchyard/filters/console/consolespec"
	"github.com/switchyard/switchyard/filters/feedback/feedbackspec"
	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/filters/judge/judgespec"
	"github.com/switchyard/switchyard/filters/quota/quotaspec"
	"github.com/switchyard/switchyard/filters/router/routerspec"
	"github.com/switchyard/switchyard/filters/translate/translatespec"
	"github.com/switchyard/switchyard/filters/usage/usagespec"
	"github.com/switchyard/switchyard/filters/usagereport/usagereportspec"
)

// All is every filter's declaration, in the order filters run.
var All = sorted(
	&adminspec.Decl, &consolespec.Decl, &authspec.Decl, &catalogspec.Decl,
	&usagereportspec.Decl, &feedbackspec.Decl, &routerspec.Decl, &quotaspec.Decl,
	&cachespec.Decl, &usagespec.Decl, &judgespec.Decl, &translatespec.Decl,
)

func sorted(ds ...*filterspec.Decl) []*filterspec.Decl {
	slices.SortFunc(ds, func(a, b *filterspec.Decl) int { return cmp.Compare(a.Order, b.Order) })
	return ds
}

// Named returns the declaration of the filter name, if there is one.
func Named(name string) (*filterspec.Decl, bool) {
	i := slices.IndexFunc(All, func(d *filterspec.Decl) bool { return d.Name == name })
	if i < 0 {
		return nil, false
	}
	return All[i], true
}

// Names lists the filters, in the order they run.
func Names() []string {
	names := make([]string, len(All))
	for i, d := range All {
		names[i] = d.Name
	}
	return names
}
