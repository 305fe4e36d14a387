package extprocapp

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/store"
)

func modelState(m *health.Monitor, provider, model string) health.State {
	for _, p := range m.Snapshot() {
		for _, md := range p.Models {
			if p.Provider == provider && md.Model == model {
				return md.State
			}
		}
	}
	return health.Healthy
}

// TestWindowShare: replica a's failures reach replica b through the
// store: b, which saw only successes, judges the model on both and finds
// it degraded; its own counts never count twice on itself.
func TestWindowShare(t *testing.T) {
	ctx := context.Background()
	board := store.NewMemory(store.Options{})
	log := slog.New(slog.DiscardHandler)
	ma, mb := newMonitor(t), newMonitor(t)
	a, b := newWindowShare(board, ma, "a", log), newWindowShare(board, mb, "b", log)
	for i := range 40 {
		status := 200
		if i%5 == 0 {
			status = 503 // 20%: removed only once it has held five minutes
		}
		ma.Observe(health.Observation{Provider: "openai", Model: "gpt", Status: status, Quota: -1})
	}
	for range 40 {
		mb.Observe(health.Observation{Provider: "openai", Model: "gpt", Status: 200, Quota: -1})
	}
	if st := modelState(mb, "openai", "gpt"); st != health.Healthy {
		t.Fatalf("b alone: %v", st)
	}
	a.tick(ctx)
	b.tick(ctx)
	if st := modelState(mb, "openai", "gpt"); st != health.Degraded {
		t.Errorf("b with a's attempts: %v, want degraded", st)
	}
	a.tick(ctx)
	for _, p := range ma.Snapshot() {
		for _, md := range p.Models {
			if md.Model == "gpt" && md.Stats.Requests != 80 {
				t.Errorf("a counts %d attempts, want its 40 and b's 40", md.Stats.Requests)
			}
		}
	}
}

func TestBackups(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(`
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: an, kind: anthropic, base_url: "http://127.0.0.1:2"}
  - {name: ge, kind: gemini, base_url: "http://127.0.0.1:3"}
models:
  - {name: big, provider: oa, context_window: 1000, max_output_tokens: 100, capabilities: [chat], price_usd_per_mtok: {input: 1, output: 1}, fallback: [small, claude]}
  - {name: small, provider: oa, context_window: 1000, max_output_tokens: 100, capabilities: [chat], price_usd_per_mtok: {input: 1, output: 1}}
  - {name: claude, provider: an, context_window: 1000, max_output_tokens: 100, capabilities: [chat], price_usd_per_mtok: {input: 1, output: 1}}
  - {name: gem, provider: ge, context_window: 1000, max_output_tokens: 100, capabilities: [chat], price_usd_per_mtok: {input: 1, output: 1}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, routing: {fallback: [gem]}}
  - {name: messages, path: /v1/messages, api: messages, routing: {fallback: [claude, gem]}}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		provider, series string
		want             []string
	}{
		// Its own list: the first fallback on another provider.
		{"oa", "big", []string{"an"}},
		// None of its own: each route's first fallback elsewhere.
		{"oa", "small", []string{"ge", "an"}},
		{"an", "claude", []string{"ge"}},
	}
	for _, tt := range tests {
		if got := backups(p, tt.provider, tt.series); !slices.Equal(got, tt.want) {
			t.Errorf("backups of %s/%s = %v, want %v", tt.provider, tt.series, got, tt.want)
		}
	}
}
