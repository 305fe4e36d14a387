package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/stack"
)

// promAlert is one alert of Prometheus' /api/v1/alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"` // pending (its for: not yet elapsed) or firing
}

// promRule is one rule of Prometheus' /api/v1/rules.
type promRule struct {
	Name           string    `json:"name"`
	Type           string    `json:"type"`
	Health         string    `json:"health"`
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

func promAPI(t *testing.T, p *stack.Prometheus, path string, data any) {
	t.Helper()
	resp, err := http.Get(p.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Status != "success" {
		t.Fatalf("%s: %d %s %v", path, resp.StatusCode, env.Status, err)
	}
	if err := json.Unmarshal(env.Data, data); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// waitAlert waits for the alert named name, with labels including match,
// to be pending or firing (firing when firing is set), calling meanwhile
// (when set) before each look.
func waitAlert(t *testing.T, p *stack.Prometheus, name string, firing bool, match map[string]string, meanwhile func()) {
	t.Helper()
	var last []promAlert
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if meanwhile != nil {
			meanwhile()
		}
		var d struct {
			Alerts []promAlert `json:"alerts"`
		}
		promAPI(t, p, "/api/v1/alerts", &d)
		last = d.Alerts
	alerts:
		for _, a := range d.Alerts {
			if a.Labels["alertname"] != name || (firing && a.State != "firing") {
				continue
			}
			for k, v := range match {
				if a.Labels[k] != v {
					continue alerts
				}
			}
			return
		}
	}
	t.Errorf("after 30s no %s alert with %v (firing only: %v); the alerts: %+v", name, match, firing, last)
}

// TestAlertingRulesOnTheStack: the shipped alerting rules
// (deploy/prometheus/alerts.yml), loaded by a real Prometheus scraping the
// stack with the shipped configuration, evaluate without error and react
// to the stack's own metrics: a tenant past 80% of its budget fires the
// budget alert at once; a provider taken down, then every provider, make
// the provider and error-rate alerts pending (their for: is minutes).
func TestAlertingRulesOnTheStack(t *testing.T) {
	const key = "sk-e2e-tight"
	sum := sha256.Sum256([]byte(key))
	s := startStack(t, stack.Options{Overlay: map[string]string{"tenants.yaml": fmt.Sprintf(tightTenant, hex.EncodeToString(sum[:]))}})
	root, _ := stack.ModuleRoot()
	shipped, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Count(string(shipped), "- alert:")
	prom, err := s.StartPrometheus(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}

	var rules struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		promAPI(t, prom, "/api/v1/rules", &rules)
		evaluated := 0
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				if r.Type == "alerting" && !r.LastEvaluation.IsZero() {
					evaluated++
				}
			}
		}
		if evaluated >= want || time.Now().After(deadline) {
			break
		}
	}
	var alerting int
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Type != "alerting" {
				continue
			}
			alerting++
			if r.Health != "ok" || r.LastError != "" || r.LastEvaluation.IsZero() {
				t.Errorf("rule %s: health %q, error %q, evaluated %v", r.Name, r.Health, r.LastError, r.LastEvaluation)
			}
		}
	}
	if alerting != want || want == 0 {
		t.Errorf("Prometheus loaded %d alerting rules, want the %d of alerts.yml", alerting, want)
	}

	// tight spends its daily 500 micro-USD until the budget refuses; the
	// requests after a pause read the committed spend into the gauges.
	refused := 0
	for i := 0; i < 400 && refused < 3; i++ {
		switch a := chatAs(t, fresh, s, key, "gpt-4o-mini", 10); {
		case a.status == http.StatusTooManyRequests && a.code() == "insufficient_quota":
			refused++
			time.Sleep(300 * time.Millisecond)
		case a.status != http.StatusOK:
			t.Fatalf("answer %d %s", a.status, a.body)
		}
	}
	if refused == 0 {
		t.Fatal("tight's budget never refused")
	}
	waitAlert(t, prom, "SwitchyardBudgetAbove80Percent", true, map[string]string{"tenant": "tight", "period": "daily"}, nil)

	if code, b := admin(t, s, http.MethodPost, "/admin/fault/down", `{"provider":"anthropic"}`); code != http.StatusOK {
		t.Fatalf("drill: %d %s", code, b)
	}
	waitAlert(t, prom, "SwitchyardProviderUnavailable", false, map[string]string{"provider": "anthropic"}, nil)

	if code, b := admin(t, s, http.MethodPost, "/admin/fault/down", `{"provider":"all"}`); code != http.StatusOK {
		t.Fatalf("drill: %d %s", code, b)
	}
	// Failures keep coming while the rule is watched: a counter's first
	// scrape is not an increase, so a burst before it would not count.
	waitAlert(t, prom, "SwitchyardHighErrorRate", false, nil, func() {
		for range 3 {
			if a := chatAs(t, fresh, s, demoKey, "gpt-4o-mini", 5); a.status != http.StatusServiceUnavailable {
				t.Fatalf("every provider down: %d %s", a.status, a.body)
			}
		}
	})
}
