package e2e

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// breakerOpen reports whether a replica's ext_proc says provider's breaker
// is open, from its metrics.
func breakerOpen(t *testing.T, r stack.Replica, provider string) bool {
	t.Helper()
	resp, err := http.Get(r.ExtProcMetrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "switchyard_router_breaker_state{") && strings.Contains(l, `provider="`+provider+`"`) &&
			strings.Contains(l, `state="open"`) {
			return strings.HasSuffix(l, " 1")
		}
	}
	return false
}

// TestHealthSharedAcrossReplicas: an outage one replica sees reaches the
// other through Redis within 10 s, though the other sent the failing
// provider nothing.
func TestHealthSharedAcrossReplicas(t *testing.T) {
	o := withHealth(t, `
    min_samples: 100000
    breaker: {consecutive_failures: 3, open_timeout: 60s}
    active_checks: {interval: 0s}
`)
	o.Replicas = 2
	s := startStack(t, o)
	if err := s.Sim.SetFault("anthropic", providersim.Fault{Mode: providersim.FaultStatus, Status: 500}); err != nil {
		t.Fatal(err)
	}
	// One kept-alive connection stays with one Envoy, so one replica sees
	// every failure.
	keep := &http.Client{Timeout: 60 * time.Second}
	var first, other int
	var opened time.Time
	for i := 0; i < 20 && opened.IsZero(); i++ {
		chatAs(t, keep, s, demoKey, "claude-3-5-haiku", 5)
		for r := range s.Replicas {
			if breakerOpen(t, s.Replicas[r], "anthropic") {
				first, other, opened = r, 1-r, time.Now()
				break
			}
		}
	}
	if opened.IsZero() {
		t.Fatal("no replica opened anthropic's breaker after 20 failing requests")
	}
	for !breakerOpen(t, s.Replicas[other], "anthropic") {
		if time.Since(opened) > 10*time.Second {
			t.Fatalf("replica %d did not hear of replica %d's outage within 10s", other, first)
		}
		time.Sleep(100 * time.Millisecond)
	}
	log := s.Log("extproc-" + strconv.Itoa(other))
	if !strings.Contains(log, "provider outage reported by another replica") || !strings.Contains(log, "3 consecutive failures") {
		t.Errorf("replica %d's breaker opened, but not from the shared report:\n%s", other, log)
	}
	if strings.Contains(s.Log("extproc-"+strconv.Itoa(first)), "provider outage reported by another replica") {
		t.Errorf("replica %d applied its own outage", first)
	}
}

// TestActiveChecks: a provider that gets no traffic is checked with its
// kind's cheap call (and its key); when it goes down the checks open its
// breaker, and when it comes back they close it, with no client request.
// /admin/providers shows the last success and the last check.
func TestActiveChecks(t *testing.T) {
	o := withHealth(t, `
    min_samples: 100000
    breaker: {consecutive_failures: 2, open_timeout: 2s, half_open_probes: 1}
    recovery: {steps: []}
    active_checks: {interval: 500ms, timeout: 400ms}
`)
	o.ProviderKeys = map[string]string{"gemini": "gemini-check-key"}
	o.Env = []string{"GEMINI_API_KEY=gemini-check-key"}
	s := startStack(t, o)
	waitFor := func(what string, ok func(providerStatus) bool) providerStatus {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			st := providerState(t, s, "gemini")
			if ok(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: gemini is %+v", what, st)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	st := waitFor("first check", func(p providerStatus) bool { return p.LastCheck != nil && p.LastCheck.OK && !p.LastSuccess.IsZero() })
	stats, err := s.Sim.Stats("gemini")
	if err != nil {
		t.Fatal(err)
	}
	var checks int
	for _, r := range stats.Recent {
		if r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/v1beta/models") {
			checks++
		}
	}
	if checks == 0 || stats.Requests != checks {
		t.Errorf("gemini saw %d requests, %d of them checks; want only checks: %+v", stats.Requests, checks, stats.Recent)
	}
	lastOK := st.LastSuccess

	if err := s.Sim.SetFault("gemini", providersim.Fault{Mode: providersim.FaultDown}); err != nil {
		t.Fatal(err)
	}
	st = waitFor("checks while down", func(p providerStatus) bool { return p.Breaker.State == "open" })
	if st.LastCheck == nil || st.LastCheck.OK || !strings.Contains(st.LastCheck.Error, "refused") || !st.LastSuccess.Equal(lastOK) {
		t.Errorf("while down: %+v", st)
	}
	if err := s.Sim.ClearFault("gemini"); err != nil {
		t.Fatal(err)
	}
	waitFor("checks after recovery", func(p providerStatus) bool {
		return p.Breaker.State == "closed" && p.LastSuccess.After(lastOK)
	})
}
