package health

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestConcurrentUse runs every method from many goroutines (run it with
// -race) and checks that no observation was lost.
func TestConcurrentUse(t *testing.T) {
	cfg := scenarioConfig()
	cfg.Window = time.Hour // the clock moves a little; nothing may leave the window
	f := newFixture(t, cfg)
	const workers, perWorker = 8, 500
	providers := []string{"openai", "anthropic", "gemini"}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				p := providers[(w+i)%len(providers)]
				model := fmt.Sprintf("m%d", i%4)
				status := 200
				if i%7 == 0 {
					status = 503
				}
				f.Observe(Observation{Provider: p, Model: model, Status: status, Latency: time.Duration(i) * time.Millisecond, Quota: 0.5, Key: uint64(i)})
				f.Admit(p, model, requestKey(w*perWorker+i))
				switch i % 50 {
				case 0:
					f.Snapshot()
				case 10:
					f.SetDrill(p, w%2 == 0)
				case 20:
					f.LatencyP95(p, model, i%2 == 0)
				case 30:
					c := cfg
					c.DegradedWeight = 0.25 + float64(w)/100
					if err := f.Reconfigure(c); err != nil {
						t.Error(err)
					}
				case 40:
					f.clock.Add(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	providerTotal, modelTotal := 0, 0
	for _, p := range f.Snapshot() {
		providerTotal += p.Stats.Requests
		for _, m := range p.Models {
			modelTotal += m.Stats.Requests
		}
	}
	if want := workers * perWorker; providerTotal != want || modelTotal != want {
		t.Errorf("windows hold %d (providers) and %d (models) attempts, want %d each", providerTotal, modelTotal, want)
	}
}
