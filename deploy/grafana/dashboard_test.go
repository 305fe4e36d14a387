package grafana

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// provisionedUID is the UID of the data source provisioning/ gives Grafana.
func provisionedUID(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("provisioning", "datasources", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Datasources []struct {
			UID  string `yaml:"uid"`
			Type string `yaml:"type"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Datasources) != 1 || c.Datasources[0].Type != "prometheus" || c.Datasources[0].UID == "" {
		t.Fatalf("provisioned data sources %+v, want one Prometheus with a UID", c.Datasources)
	}
	return c.Datasources[0].UID
}

func TestDashboards(t *testing.T) {
	uid := provisionedUID(t)
	ds, err := Load("dashboards")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) == 0 {
		t.Fatal("no dashboard in dashboards/")
	}
	uids := map[string]string{}
	for name, d := range ds {
		t.Run(name, func(t *testing.T) {
			if d.UID == "" || d.Title == "" {
				t.Errorf("uid %q, title %q: both are needed for provisioning", d.UID, d.Title)
			}
			if other, dup := uids[d.UID]; dup {
				t.Errorf("uid %q also used by %s", d.UID, other)
			}
			uids[d.UID] = name
			vars := map[string]bool{}
			for _, v := range d.Templating.List {
				vars[v.Name] = true
				if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != uid) {
					t.Errorf("variable %s: data source %+v, want uid %q", v.Name, v.Datasource, uid)
				}
			}
			ids := map[int]bool{}
			queries := 0
			for _, p := range d.AllPanels() {
				if ids[p.ID] {
					t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
				}
				ids[p.ID] = true
				if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
					t.Errorf("panel %q: grid position %+v outside the 24-column grid", p.Title, p.GridPos)
				}
				if p.Type == "row" {
					continue
				}
				if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != uid {
					t.Errorf("panel %q: data source %+v, want the provisioned prometheus %q", p.Title, p.Datasource, uid)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
				for _, tg := range p.Targets {
					queries++
					if tg.Expr == "" || tg.RefID == "" {
						t.Errorf("panel %q: query %+v lacks an expression or refId", p.Title, tg)
					}
					if tg.Datasource != nil && tg.Datasource.UID != uid {
						t.Errorf("panel %q query %s: data source %+v, want %q", p.Title, tg.RefID, tg.Datasource, uid)
					}
					for _, v := range Variables(tg.Expr) {
						if _, builtin := Builtins[v]; !builtin && !vars[v] {
							t.Errorf("panel %q query %s uses $%s, which the dashboard does not define", p.Title, tg.RefID, v)
						}
					}
				}
			}
			if queries == 0 {
				t.Error("no queries")
			}
		})
	}
}

func TestExpand(t *testing.T) {
	d := &Dashboard{}
	d.Templating.List = []Variable{{Name: "tenant", AllValue: ".*"}}
	tests := []struct {
		name   string
		expr   string
		values map[string]string
		want   string
	}{
		{"builtin and variable", `rate(x{tenant=~"$tenant"}[$__rate_interval])`, nil, `rate(x{tenant=~".*"}[1m])`},
		{"braced", `increase(x[${__range}])`, nil, `increase(x[1h])`},
		{"a chosen value wins", `x{tenant=~"$tenant"}`, map[string]string{"tenant": "acme"}, `x{tenant=~"acme"}`},
		{"unknown stays", `x{a="$nope"}`, nil, `x{a="$nope"}`},
	}
	for _, tt := range tests {
		if got := d.Expand(tt.expr, tt.values); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestProvisioningFindsTheDashboards: the provider's path is where
// docker-compose.yml mounts dashboards/.
func TestProvisioningFindsTheDashboards(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("provisioning", "dashboards", "switchyard.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil || len(c.Providers) != 1 {
		t.Fatalf("providers %+v: %v", c.Providers, err)
	}
	compose, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var dc struct {
		Services map[string]struct {
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(compose, &dc); err != nil {
		t.Fatal(err)
	}
	want := "./deploy/grafana/dashboards:" + c.Providers[0].Options.Path + ":ro"
	for _, v := range dc.Services["grafana"].Volumes {
		if v == want {
			return
		}
	}
	t.Errorf("grafana's volumes %v lack %q", dc.Services["grafana"].Volumes, want)
}
