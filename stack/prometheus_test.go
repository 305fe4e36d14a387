package stack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// TestScrapeConfig: the shipped scrape configuration, pointed at a stack,
// scrapes every process of it every second, Envoy on its admin endpoint.
func TestScrapeConfig(t *testing.T) {
	s := &Stack{XDS: "http://127.0.0.1:7003", Replicas: []Replica{
		{EnvoyAdmin: "http://127.0.0.1:7001", ExtProcMetrics: "http://127.0.0.1:7002"},
		{EnvoyAdmin: "http://127.0.0.1:7011", ExtProcMetrics: "http://127.0.0.1:7012"},
	}}
	b, err := s.ScrapeConfig(root(t))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, j := range c.ScrapeConfigs {
		got[j.JobName] = j.MetricsPath + " " + strings.Join(j.StaticConfigs[0].Targets, ",")
	}
	want := map[string]string{
		"envoy":   "/stats/prometheus 127.0.0.1:7001,127.0.0.1:7011",
		"extproc": " 127.0.0.1:7002,127.0.0.1:7012",
		"xds":     " 127.0.0.1:7003",
	}
	if diff := cmp.Diff(want, got); diff != "" || c.Global.ScrapeInterval != "1s" {
		t.Errorf("interval %q, jobs (-want +got):\n%s", c.Global.ScrapeInterval, diff)
	}
}
