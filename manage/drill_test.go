package manage

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/store"
)

// TestSetDrill: a drill reaches the shared board and this replica's
// monitor, and ends on both; an unknown provider is refused and changes
// nothing.
func TestSetDrill(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(`
providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:1"}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	mon, err := health.New(health.DefaultConfig(), time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	mon.Track(map[string][]string{"openai": {"m"}})
	board := store.NewMemory(store.Options{})
	ctx := context.Background()
	drilled := func() (bool, []string) {
		t.Helper()
		ds, err := board.Drills(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return mon.Snapshot()[0].Drill, ds
	}

	if err := SetDrill(ctx, p, board, mon, "openai", true); err != nil {
		t.Fatal(err)
	}
	if here, shared := drilled(); !here || len(shared) != 1 || shared[0] != "openai" {
		t.Errorf("down: here %v, shared %v", here, shared)
	}
	if err := SetDrill(ctx, p, board, mon, "openai", false); err != nil {
		t.Fatal(err)
	}
	if here, shared := drilled(); here || len(shared) != 0 {
		t.Errorf("up: here %v, shared %v", here, shared)
	}
	err = SetDrill(ctx, p, board, mon, "nobody", true)
	if e, ok := err.(*openaiapi.Error); !ok || e.Status != 404 || e.Code != "unknown_provider" {
		t.Errorf("unknown provider: %v", err)
	}
	if here, shared := drilled(); here || len(shared) != 0 {
		t.Errorf("a refused drill changed something: here %v, shared %v", here, shared)
	}
}
