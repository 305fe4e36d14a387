package health

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSnapshot(t *testing.T) {
	f := newFixture(t, scenarioConfig())
	f.Track(map[string][]string{"anthropic": {"claude"}, "openai": {"gpt-4o", "gpt-4o-mini"}})
	f.clock.Add(time.Second)
	for i := range 40 {
		o := Observation{Provider: "openai", Model: "gpt-4o", Status: 200, Latency: 800 * time.Millisecond, TTFT: 200 * time.Millisecond, Quota: 0.5}
		if i%10 == 0 {
			o.Status = 500
		}
		f.Observe(o)
	}
	f.SetDrill("anthropic", true)
	f.clock.Add(time.Second)

	got := f.Snapshot()
	at1 := t0.Add(time.Second)
	want := []ProviderStatus{
		{
			Provider: "anthropic", State: Unavailable, Reason: "fault drill", Since: at1, Drill: true,
			Breaker: BreakerStatus{State: BreakerClosed, Since: t0},
			Stats:   Stats{Quota: -1},
			Models: []ModelStatus{
				{Model: "claude", State: Healthy, Since: t0, Share: 1, Stats: Stats{Quota: -1}},
			},
		},
		{
			Provider: "openai", State: Healthy, Since: t0,
			Breaker:     BreakerStatus{State: BreakerClosed, Since: t0, Requests: 40, Failures: 4},
			LastSuccess: at1,
			Stats: Stats{
				Requests: 40, Errors: 4, ErrorRate: 0.1,
				LatencySamples: 40, P95: Duration(800 * time.Millisecond), P99: Duration(800 * time.Millisecond),
				TTFTSamples: 40, TTFTP95: Duration(200 * time.Millisecond), Quota: -1,
			},
			Models: []ModelStatus{
				{
					Model: "gpt-4o", State: Unavailable, Reason: "error rate 10% > 5%", Since: at1, Share: 1,
					Stats: Stats{
						Requests: 40, Errors: 4, ErrorRate: 0.1,
						LatencySamples: 40, P95: Duration(800 * time.Millisecond), P99: Duration(800 * time.Millisecond),
						TTFTSamples: 40, TTFTP95: Duration(200 * time.Millisecond), Quota: 0.5,
					},
				},
				{Model: "gpt-4o-mini", State: Healthy, Since: t0, Share: 1, Stats: Stats{Quota: -1}},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Snapshot (-want +got):\n%s", diff)
	}
}

func TestSnapshotJSON(t *testing.T) {
	f := newFixture(t, scenarioConfig())
	f.observeN("openai", "gpt-4o", 20, 200, 3400*time.Millisecond)
	f.observeN("openai", "gpt-4o", 5, 503, 3400*time.Millisecond)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f.Snapshot()); err != nil {
		t.Fatal(err)
	}
	want := `[{"provider":"openai","state":"unavailable","reason":"breaker open: 5 consecutive failures",` +
		`"since":"2026-03-01T12:00:00Z","drill":false,` +
		`"breaker":{"state":"open","since":"2026-03-01T12:00:00Z","reason":"5 consecutive failures","requests":0,"failures":0,` +
		`"consecutive_failures":0,"half_open_at":"2026-03-01T12:00:30Z","probes":0,"probe_successes":0},` +
		`"stats":{"requests":25,"errors":5,"error_rate":0.2,"latency_samples":25,"p95":"3.4s","p99":"3.4s","ttft_samples":0,"ttft_p95":"0s","quota":-1},` +
		`"last_success":"2026-03-01T12:00:00Z",` +
		`"models":[{"model":"gpt-4o","state":"unavailable","reason":"error rate 20% > 5%","since":"2026-03-01T12:00:00Z","share":1,` +
		`"stats":{"requests":25,"errors":5,"error_rate":0.2,"latency_samples":25,"p95":"3.4s","p99":"3.4s","ttft_samples":0,"ttft_p95":"0s","quota":-1}}]}]` + "\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("Snapshot JSON (-want +got):\n%s", diff)
	}
}
