package e2e

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/providersim"
)

// soakEnv, when set to a duration, runs TestSoak for that long (`make
// soak` sets 10m); it is not part of make test.
const soakEnv = "SWITCHYARD_SOAK"

// TestSoak: steady traffic for the gpt-4o-mini model at about 60 % of the
// capacity measured first, while its provider, openai, flaps (down 15 s,
// up 15 s). Every request can be served by the fallback (claude-3-5-haiku
// on anthropic), so every one must be: no failed request. ext_proc's
// resident memory and goroutines after warm-up and at the end are logged
// for docs/RELIABILITY.md.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv(soakEnv))
	if err != nil || d <= 0 {
		t.Skipf("set %s to a duration (make soak) to run the soak", soakEnv)
	}
	s := startStack(t, defaultOptions())
	metrics := s.Replicas[0].ExtProcMetrics + "/metrics"
	gauges := func() (rss, goroutines float64) {
		rss, err := harness.MetricSum(metrics, "process_resident_memory_bytes")
		if err != nil {
			t.Fatal(err)
		}
		goroutines, err = harness.MetricSum(metrics, "go_goroutines")
		if err != nil {
			t.Fatal(err)
		}
		return rss, goroutines
	}
	// At this rate the simulators' quota of 10,000 requests a minute (a
	// real account's) runs out in seconds, and the gateway would rightly
	// route around a provider that says so: give them one that does not.
	plenty := providersim.Plenty()
	for _, p := range []string{"openai", "anthropic"} {
		if err := s.Sim.SetFault(p, providersim.Fault{QuotaRemaining: plenty}); err != nil {
			t.Fatal(err)
		}
	}
	const measureFor = 3 * time.Second
	capacity := float64(flood(s.URL, "gpt-4o-mini", 32, measureFor, 10*time.Second, 1<<40).byStatus[http.StatusOK]) / measureFor.Seconds()
	const workers = 16
	rate := 0.6 * capacity
	l := startLoad(s.URL, workers, time.Duration(float64(workers)/rate*float64(time.Second)))
	flaps := make(chan struct{})
	go func() {
		defer close(flaps)
		for end := time.Now().Add(d); time.Now().Before(end); {
			_ = s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultDown, QuotaRemaining: plenty})
			time.Sleep(15 * time.Second)
			_ = s.Sim.SetFault("openai", providersim.Fault{QuotaRemaining: plenty})
			time.Sleep(15 * time.Second)
		}
	}()
	time.Sleep(30 * time.Second)
	rss0, g0 := gauges()
	<-flaps
	rss1, g1 := gauges()
	seen := l.end()
	byStatus := map[int]int{}
	for _, o := range seen {
		byStatus[o.status]++
	}
	t.Logf("soak of %v at %.0f req/s offered (60 %% of the %.0f req/s measured by 32 clients for %v), openai flapping every 30 s: clients saw %v (%.0f req/s served)",
		d, rate, capacity, measureFor, byStatus, float64(byStatus[http.StatusOK])/d.Seconds())
	t.Logf("ext_proc after warm-up: %.0f MB resident, %.0f goroutines; at the end: %.0f MB, %.0f goroutines",
		rss0/(1<<20), g0, rss1/(1<<20), g1)
	if failed := len(seen) - byStatus[http.StatusOK]; failed > 0 {
		t.Errorf("%d of %d requests failed, though the fallback could serve every one", failed, len(seen))
	}
}
