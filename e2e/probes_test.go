package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/probe"
)

// probeKey is the key openai's simulator insists on, read by the
// gateway from OPENAI_API_KEY: probes must carry it as requests do.
const probeKey = "sk-openai-probe-key"

// probedProviders is configs/local/providers.yaml with openai keyed and
// probing gpt-4o every second, within a cap of a cent a day.
func probedProviders(t *testing.T) string {
	t.Helper()
	root, _ := stack.ModuleRoot()
	b, err := os.ReadFile(filepath.Join(root, "configs", "local", "providers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const old = "    base_url: http://127.0.0.1:9101\n"
	if !strings.Contains(string(b), old) {
		t.Fatalf("configs/local/providers.yaml no longer has %q", old)
	}
	return strings.Replace(string(b), old, old+"    api_key: {env: OPENAI_API_KEY}\n"+
		"    probes: {interval: 1s, timeout: 1s, daily_cap_usd: 0.01, models: [gpt-4o]}\n", 1)
}

// probeVerdict is what GET /admin/providers says of gpt-4o's probe of
// capability on openai: its verdict and when its probes last ran.
func probeVerdict(t *testing.T, s *stack.Stack, capability string) (probe.Result, probe.Record) {
	t.Helper()
	code, b := admin(t, s, http.MethodGet, "/admin/providers", "")
	if code != http.StatusOK {
		t.Fatalf("providers: %d %s", code, b)
	}
	var answer struct {
		Probes []probe.Record `json:"probes"`
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		t.Fatal(err)
	}
	for _, r := range answer.Probes {
		if r.Provider != "openai" {
			continue
		}
		for _, m := range r.Models {
			for _, c := range m.Capabilities {
				if m.Model == "gpt-4o" && c.Capability == capability {
					return c, r
				}
			}
		}
	}
	return probe.Result{}, probe.Record{}
}

// TestProbesRouteAroundAFailingCapability: openai's gpt-4o claims tools,
// and its simulator stops taking them. The probes find it within
// seconds: /admin/providers and every replica's metrics say tools fail,
// a tool request naming gpt-4o goes to its fallback (anthropic) while a
// request without tools still reaches gpt-4o on openai. Once tools
// return, the probes pass and tool requests reach openai again. Every
// probe carried openai's key, and each is a ledger row with its cost.
func TestProbesRouteAroundAFailingCapability(t *testing.T) {
	s := startStack(t, stack.Options{
		Replicas:     2,
		Overlay:      map[string]string{"providers.yaml": probedProviders(t)},
		ProviderKeys: map[string]string{"openai": probeKey},
		Env:          []string{"OPENAI_API_KEY=" + probeKey},
	})
	waitVerdict := func(want probe.Verdict) time.Duration {
		t.Helper()
		start := time.Now()
		deadline := start.Add(20 * time.Second)
		for {
			got, _ := probeVerdict(t, s, "tools")
			failing := 0.0
			if want == probe.Failing {
				failing = 1
			}
			agreed := got.Verdict == want
			for _, r := range s.Replicas {
				agreed = agreed && metricSum(t, r.ExtProcMetrics+"/metrics", "switchyard_probe_failing",
					`provider="openai"`, `model="gpt-4o"`, `capability="tools"`) == failing
			}
			if agreed {
				return time.Since(start)
			}
			if time.Now().After(deadline) {
				t.Fatalf("gpt-4o's tools probe is %+v, want %s on admin and every replica's metrics", got, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitVerdict(probe.Passing)

	if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultLacks, Capability: providersim.LackTools}); err != nil {
		t.Fatal(err)
	}
	t.Logf("tools failing on admin and both replicas %s after the simulator lost them", waitVerdict(probe.Failing).Round(10*time.Millisecond))
	got, rec := probeVerdict(t, s, "tools")
	if !strings.Contains(got.Detail, "status 400") || !strings.Contains(got.Detail, "does not support tools") {
		t.Errorf("the failing verdict's detail %q does not say why", got.Detail)
	}
	if rec.CapMicros != 10_000 || rec.SpentMicros <= 0 || rec.SpentMicros > rec.CapMicros {
		t.Errorf("the record spent %d of %d micro-USD, want some of a cap of 10000", rec.SpentMicros, rec.CapMicros)
	}
	for _, c := range []string{"vision", "json", "stream"} {
		if v, _ := probeVerdict(t, s, c); v.Verdict != probe.Passing {
			t.Errorf("gpt-4o's %s probe is %+v while only tools are gone, want passing", c, v)
		}
	}

	const toolRequest = `{"model":"gpt-4o","max_tokens":20,"messages":[{"role":"user","content":"what is the weather?"}],` +
		`"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object","properties":{}}}}]}`
	servedBy := func(body string) string {
		t.Helper()
		resp, b := withKey(t, s, http.MethodPost, "/v1/chat/completions", demoKey, body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return resp.Header.Get("x-switchyard-provider")
	}
	for range 3 {
		if p := servedBy(toolRequest); p != "anthropic" {
			t.Errorf("a tool request for gpt-4o was served by %s while its tools probe fails, want anthropic (its fallback)", p)
		}
		if p := servedBy(`{"model":"gpt-4o","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`); p != "openai" {
			t.Errorf("a request for gpt-4o without tools was served by %s, want openai", p)
		}
	}

	if err := s.Sim.ClearFault("openai"); err != nil {
		t.Fatal(err)
	}
	t.Logf("tools passing again %s after they returned", waitVerdict(probe.Passing).Round(10*time.Millisecond))
	if p := servedBy(toolRequest); p != "openai" {
		t.Errorf("once tools returned, a tool request for gpt-4o was served by %s, want openai", p)
	}

	st, err := s.Sim.Stats("openai")
	if err != nil {
		t.Fatal(err)
	}
	if n := st.ByStatus[http.StatusUnauthorized]; n != 0 {
		t.Errorf("openai refused %d requests for their key", n)
	}
	var rows, costed int
	for _, r := range ledgerRecords(t, s) {
		if strings.HasPrefix(r.Route, probe.RoutePrefix) {
			rows++
			if r.Provider == "openai" && r.ServedModel == "gpt-4o" && r.Tenant == "" && r.CostMicros > 0 {
				costed++
			}
		}
	}
	if rows == 0 || costed != rows {
		t.Errorf("%d probe rows in the ledger, %d of them openai's gpt-4o with a cost and no tenant; want every one", rows, costed)
	}
	var cost float64
	for _, r := range s.Replicas {
		cost += metricSum(t, r.ExtProcMetrics+"/metrics", "switchyard_probe_cost_micro_usd_total", `provider="openai"`)
	}
	if cost <= 0 {
		t.Error("no probe cost in the metrics")
	}
}
