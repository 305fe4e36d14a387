package health

import (
	"slices"
	"testing"
	"time"
)

// TestOutageSharing: a breaker that opens on one replica's own evidence is
// told to the hook once; another replica applies it with Report, which
// never reaches its own hook, so replicas cannot echo each other.
func TestOutageSharing(t *testing.T) {
	a, b := newFixture(t, scenarioConfig()), newFixture(t, scenarioConfig())
	b.clock = a.clock
	b.Monitor.now = a.clock.Now
	for _, f := range []*fixture{a, b} {
		f.Track(map[string][]string{"anthropic": {"claude"}, "openai": {"gpt"}})
	}
	var fromA, fromB []Outage
	a.OnOutage(func(o Outage) { fromA = append(fromA, o) })
	b.OnOutage(func(o Outage) { fromB = append(fromB, o) })

	a.observeN("anthropic", "claude", 4, 529, time.Second)
	if len(fromA) != 0 {
		t.Fatalf("outages after 4 failures: %+v", fromA)
	}
	a.observeN("anthropic", "claude", 3, 529, time.Second) // the 5th opens; later ones hit an open breaker
	want := []Outage{{Provider: "anthropic", Reason: "5 consecutive failures", At: t0}}
	if !slices.Equal(fromA, want) {
		t.Fatalf("outages = %+v, want %+v", fromA, want)
	}

	if !b.Report("anthropic", "seen by replica a: 5 consecutive failures") {
		t.Fatal("Report did not open b's breaker")
	}
	if got := b.Admit("anthropic", "claude", 7); got.Allowed || got.Reason != "breaker open: seen by replica a: 5 consecutive failures" {
		t.Errorf("b admits %+v after the report", got)
	}
	if got := b.Admit("openai", "gpt", 7); !got.Allowed {
		t.Errorf("b's other provider: %+v", got)
	}
	if b.Report("anthropic", "again") {
		t.Error("a second report reopened an open breaker")
	}
	if b.Report("unknown", "x") {
		t.Error("a report of a provider the policy does not name was applied")
	}
	for _, p := range b.Snapshot() {
		if p.Provider == "unknown" {
			t.Error("a report created an entry")
		}
	}
	if len(fromB) != 0 {
		t.Errorf("b echoed a report: %+v", fromB)
	}

	// Both turn half-open after the timeout; a's probe fails and is shared
	// again, b's probe recovers b on its own.
	a.clock.Add(30 * time.Second)
	if got := a.Admit("anthropic", "claude", 1); !got.Probe {
		t.Fatalf("a after the timeout: %+v", got)
	}
	a.Observe(Observation{Provider: "anthropic", Model: "claude", Status: 503, Quota: -1, Key: 1})
	if len(fromA) != 2 || fromA[1].Reason != "probe failed" {
		t.Errorf("outages after a failed probe = %+v", fromA)
	}
	for key := uint64(1); key <= 3; key++ {
		if got := b.Admit("anthropic", "claude", key); !got.Probe {
			t.Fatalf("b after the timeout: %+v", got)
		}
		b.Observe(Observation{Provider: "anthropic", Model: "claude", Status: 200, Quota: -1, Key: key})
	}
	if st := b.providerStatus(t, "anthropic").Breaker.State; st != BreakerClosed {
		t.Errorf("b's breaker after 3 probes: %v", st)
	}
	// A report while half-open opens the breaker again.
	a.clock.Add(30 * time.Second)
	a.Admit("anthropic", "claude", 9)
	if !a.Report("anthropic", "peer probe failed") || a.providerStatus(t, "anthropic").Breaker.State != BreakerOpen {
		t.Error("a report did not reopen a half-open breaker")
	}
	if len(fromA) != 2 {
		t.Errorf("a report reached the hook: %+v", fromA)
	}
}

// TestActiveChecks: providers without traffic are due a check every
// interval; failed checks open the breaker like failed attempts, and
// successful ones take the half-open probe slots and close it. Checks
// never touch a model's window.
func TestActiveChecks(t *testing.T) {
	f := newFixture(t, scenarioConfig())
	f.Track(map[string][]string{"anthropic": {"claude"}, "openai": {"gpt"}, "gemini": {"flash"}})
	var outages []Outage
	f.OnOutage(func(o Outage) { outages = append(outages, o) })
	every := 10 * time.Second

	if got := f.Due(every); !slices.Equal(got, []string{"anthropic", "gemini", "openai"}) {
		t.Fatalf("due at start = %v", got)
	}
	f.observeN("openai", "gpt", 1, 200, time.Second)
	f.SetDrill("gemini", true)
	f.Check(CheckResult{Provider: "anthropic", Status: 200, Latency: 80 * time.Millisecond})
	if got := f.Due(every); len(got) != 0 {
		t.Fatalf("due after traffic, a check and a drill = %v", got)
	}
	f.clock.Add(every)
	if got := f.Due(every); !slices.Equal(got, []string{"anthropic", "openai"}) {
		t.Fatalf("due one interval later = %v", got)
	}
	p := f.providerStatus(t, "anthropic")
	want := CheckStatus{At: t0, OK: true, Status: 200, Latency: Duration(80 * time.Millisecond)}
	if p.LastCheck == nil || *p.LastCheck != want || !p.LastSuccess.Equal(t0) {
		t.Errorf("after a good check: last_check %+v, last_success %v", p.LastCheck, p.LastSuccess)
	}
	if s := f.providerStatus(t, "openai"); !s.LastSuccess.Equal(t0) || s.LastCheck != nil {
		t.Errorf("after a good attempt: last_success %v, last_check %+v", s.LastSuccess, s.LastCheck)
	}

	for i := range 5 {
		f.Check(CheckResult{Provider: "anthropic", Failure: ConnectFailure, Error: "connection refused"})
		if st := f.providerStatus(t, "anthropic").Breaker.State; (st == BreakerOpen) != (i == 4) {
			t.Fatalf("after %d failed checks the breaker is %v", i+1, st)
		}
	}
	if len(outages) != 1 || outages[0].Reason != "5 consecutive failures" {
		t.Errorf("outages = %+v", outages)
	}
	warns := atLeast(f.log.take(), 0)
	var checkWarns int
	for _, r := range warns {
		if r.Msg == "provider check failed" {
			checkWarns++
		}
	}
	if checkWarns != 1 {
		t.Errorf("%d check warnings for one run of failures, want 1", checkWarns)
	}
	if s := f.model(t, "anthropic", "claude").Stats; s.Requests != 0 {
		t.Errorf("checks reached the model's window: %+v", s)
	}
	f.Check(CheckResult{Provider: "anthropic", Status: 200})
	if st := f.providerStatus(t, "anthropic").Breaker.State; st != BreakerOpen {
		t.Errorf("a check closed an open breaker: %v", st)
	}

	f.clock.Add(30 * time.Second)
	for i := range 3 {
		f.clock.Add(time.Millisecond) // each check holds its own slot
		f.Check(CheckResult{Provider: "anthropic", Status: 200})
		if st := f.providerStatus(t, "anthropic").Breaker.State; (st == BreakerClosed) != (i == 2) {
			t.Fatalf("after %d good checks half-open the breaker is %v", i+1, st)
		}
	}
	if got := f.Admit("anthropic", "claude", 1); !got.Allowed || got.Reason != "canary 10%" {
		t.Errorf("after recovery by checks: %+v", got)
	}
	f.Check(CheckResult{Provider: "anthropic", Status: 500})
	if s := f.providerStatus(t, "anthropic"); s.Breaker.State != BreakerOpen || s.Breaker.Reason != "active check failed during canary" {
		t.Errorf("a failed check during the canary: %+v", s.Breaker)
	}
	f.Check(CheckResult{Provider: "unknown", Status: 500})
	for _, p := range f.Snapshot() {
		if p.Provider == "unknown" {
			t.Error("a check created an entry")
		}
	}
}

func TestChecksConfig(t *testing.T) {
	c := scenarioConfig()
	c.Checks = CheckConfig{Interval: 10 * time.Second, Timeout: 20 * time.Second}
	if err := c.Validate(); err == nil {
		t.Error("a timeout above the interval passed")
	}
	c.Checks = CheckConfig{Interval: -time.Second}
	if err := c.Validate(); err == nil {
		t.Error("a negative interval passed")
	}
	c.Checks = CheckConfig{}
	if err := c.Validate(); err != nil {
		t.Errorf("checks off: %v", err)
	}
}
