package health

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// gather registers c on a fresh registry and returns its samples as
// `name{label="value",...} value` lines, sorted.
func gather(t *testing.T, c prometheus.Collector) []string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatalf("Lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	var lines []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			lines = append(lines, fmt.Sprintf("%s{%s} %v", f.GetName(), strings.Join(labels, ","), m.GetGauge().GetValue()))
		}
	}
	sort.Strings(lines)
	return lines
}

func TestCollector(t *testing.T) {
	f := newFixture(t, scenarioConfig())
	f.Track(map[string][]string{"openai": {"gpt-4o"}, "anthropic": {"claude"}})
	f.observeN("anthropic", "claude", 5, 529, 0)
	f.SetDrill("openai", true)
	f.SetDrill("openai", false) // canary at 10 %

	want := []string{
		`switchyard_router_breaker_state{provider="anthropic",state="closed"} 0`,
		`switchyard_router_breaker_state{provider="anthropic",state="half_open"} 0`,
		`switchyard_router_breaker_state{provider="anthropic",state="open"} 1`,
		`switchyard_router_breaker_state{provider="openai",state="closed"} 1`,
		`switchyard_router_breaker_state{provider="openai",state="half_open"} 0`,
		`switchyard_router_breaker_state{provider="openai",state="open"} 0`,
		`switchyard_router_canary_share{model="claude",provider="anthropic"} 1`,
		`switchyard_router_canary_share{model="gpt-4o",provider="openai"} 0.1`,
		`switchyard_router_model_health{model="claude",provider="anthropic",state="degraded"} 0`,
		`switchyard_router_model_health{model="claude",provider="anthropic",state="healthy"} 1`,
		`switchyard_router_model_health{model="claude",provider="anthropic",state="unavailable"} 0`,
		`switchyard_router_model_health{model="gpt-4o",provider="openai",state="degraded"} 0`,
		`switchyard_router_model_health{model="gpt-4o",provider="openai",state="healthy"} 1`,
		`switchyard_router_model_health{model="gpt-4o",provider="openai",state="unavailable"} 0`,
		`switchyard_router_provider_health{provider="anthropic",state="degraded"} 0`,
		`switchyard_router_provider_health{provider="anthropic",state="healthy"} 0`,
		`switchyard_router_provider_health{provider="anthropic",state="unavailable"} 1`,
		`switchyard_router_provider_health{provider="openai",state="degraded"} 0`,
		`switchyard_router_provider_health{provider="openai",state="healthy"} 1`,
		`switchyard_router_provider_health{provider="openai",state="unavailable"} 0`,
	}
	if diff := cmp.Diff(want, gather(t, f.Collector())); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}
