package health_test

import (
	"sync"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/health"
)

// TestInFlight: attempts count per provider and model from Begin until
// their end, which counts once however often it is called.
func TestInFlight(t *testing.T) {
	t.Parallel()
	m, err := health.New(policy.DefaultHealthConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ends := make(chan func(), 100)
	for range 100 {
		wg.Go(func() { ends <- m.Begin("east", "gpt-4o") })
	}
	wg.Wait()
	other := m.Begin("west", "gpt-4o")
	if got := m.InFlight("east", "gpt-4o"); got != 100 {
		t.Fatalf("in flight on east %d, want 100", got)
	}
	close(ends)
	for end := range ends {
		end()
		end()
	}
	if got, w := m.InFlight("east", "gpt-4o"), m.InFlight("west", "gpt-4o"); got != 0 || w != 1 {
		t.Errorf("after every east attempt ended: east %d, west %d; want 0 and 1", got, w)
	}
	other()
	if m.InFlight("west", "gpt-4o") != 0 || m.InFlight("north", "gpt-4o") != 0 {
		t.Error("an ended or unknown deployment has attempts in flight")
	}
}
