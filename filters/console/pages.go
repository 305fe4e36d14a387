package console

import (
	"context"
	"net/http"
	"strings"
)

// view is what every page's template gets: the layout's fields and the
// page's own Data.
type view struct {
	Title string
	// Nav is the tab the page belongs to.
	Nav  string
	CSRF string
	// Version is the policy serving.
	Version string
	// Error and Flash report the outcome of a change.
	Error string
	Flash string
	// Live is the path a page's live parts refresh from.
	Live string
	Data any
}

// tabs are the console's pages in the order the navigation shows them.
var tabs = []struct{ Path, Title string }{
	{"overview", "Overview"},
	{"tenants", "Tenants and keys"},
	{"providers", "Providers"},
	{"requests", "Requests"},
	{"routing", "Routing"},
	{"policy", "Policy"},
}

// loader builds a page's data.
type loader func(ctx context.Context, c *call) (any, error)

// page answers a GET of a signed-in browser.
func (f *Filter) page(ctx context.Context, c *call) (int, []byte) {
	loaders := map[string]loader{
		"overview":  f.overview,
		"tenants":   f.tenants,
		"providers": f.providers,
		"requests":  f.requests,
		"routing":   f.routing,
		"policy":    f.policyPage,
	}
	name, rest, _ := strings.Cut(c.sub, "/")
	switch {
	case c.sub == "":
		return f.redirect(c, "/console/overview")
	case name == "requests" && rest != "":
		return f.show(ctx, c, "request", "requests", func(ctx context.Context, c *call) (any, error) { return f.request(ctx, c, rest) })
	case rest == "" && loaders[name] != nil:
		return f.show(ctx, c, name, name, loaders[name])
	}
	return f.problem(c, http.StatusNotFound, "The console has no page "+c.x.Path+".")
}

// show renders page, of tab nav, with the data load makes.
func (f *Filter) show(ctx context.Context, c *call, page, nav string, load loader) (int, []byte) {
	data, err := load(ctx, c)
	if err != nil {
		return f.fail(c, err)
	}
	return f.renderView(c, http.StatusOK, page, &view{Nav: nav, Data: data})
}

// renderView fills the layout's fields of v and renders page.
func (f *Filter) renderView(c *call, status int, page string, v *view) (int, []byte) {
	for _, t := range tabs {
		if t.Path == v.Nav && v.Title == "" {
			v.Title = t.Title
		}
	}
	v.Version = c.x.Policy.Version
	if c.sess != nil {
		v.CSRF = c.sess.csrf
	}
	if v.Live == "" && c.x.Method == http.MethodGet {
		v.Live = c.x.Path
		if c.x.Query != "" {
			v.Live += "?" + c.x.Query
		}
	}
	b, err := render(page, v)
	if err != nil {
		return f.fail(c, err)
	}
	return status, b
}
