package grafana

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Dashboard is the part of a Grafana dashboard model the checks read.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is one panel; a row's own panels are nested when it is collapsed.
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource"`
	Targets    []Target    `json:"targets"`
	Panels     []Panel     `json:"panels"`
	GridPos    struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
}

// Datasource names a data source by type and UID.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
}

// Variable is a dashboard template variable.
type Variable struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Datasource *Datasource `json:"datasource"`
	Definition string      `json:"definition"`
	AllValue   string      `json:"allValue"`
}

// Load reads every dashboard (*.json) in dir, sorted by file name.
func Load(dir string) (map[string]*Dashboard, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := map[string]*Dashboard{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var d Dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out[filepath.Base(p)] = &d
	}
	return out, nil
}

// AllPanels returns the dashboard's panels, rows' nested panels included,
// in order.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Query is one query of one panel.
type Query struct {
	Panel string
	RefID string
	Expr  string
}

// Queries returns every panel query of the dashboard.
func (d *Dashboard) Queries() []Query {
	var out []Query
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			out = append(out, Query{Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
		}
	}
	return out
}

// Builtins are the Grafana variables the dashboards use, with the values
// Prometheus is given in their place outside Grafana.
var Builtins = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "15s",
	"__range":         "1h",
}

var variableRE = regexp.MustCompile(`\$(\w+)|\$\{(\w+)\}`)

// Variables returns the names of the variables expr uses, sorted.
func Variables(expr string) []string {
	seen := map[string]bool{}
	for _, m := range variableRE.FindAllStringSubmatch(expr, -1) {
		seen[m[1]+m[2]] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Expand replaces the variables of expr as Grafana would with every value
// selected: builtins by Builtins (overridden by values), the dashboard's
// variables by their "all" value.
func (d *Dashboard) Expand(expr string, values map[string]string) string {
	return variableRE.ReplaceAllStringFunc(expr, func(m string) string {
		name := strings.Trim(m, "${}")
		if v, ok := values[name]; ok {
			return v
		}
		if v, ok := Builtins[name]; ok {
			return v
		}
		for _, v := range d.Templating.List {
			if v.Name == name {
				return v.AllValue
			}
		}
		return m
	})
}
