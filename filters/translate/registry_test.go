package translate

import (
	"slices"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	openaix "github.com/switchyard/switchyard/translator/openai"
)

// TestEveryKindHasATranslator keeps the policy's kinds and the registry in
// step, and the policy's dialect names with the translator's.
func TestEveryKindHasATranslator(t *testing.T) {
	for _, k := range []policy.Kind{policy.KindOpenAI, policy.KindAzureOpenAI, policy.KindOpenAICompatible, policy.KindAnthropic, policy.KindGemini} {
		if translators[k] == nil {
			t.Errorf("kind %s has no translator", k)
		}
	}
	var known []string
	for _, d := range openaix.Dialects() {
		if d != "" {
			known = append(known, string(d))
		}
	}
	slices.Sort(known)
	if got := policy.Dialects(); !slices.Equal(got, known) {
		t.Errorf("policy accepts dialects %v, the translator knows %v", got, known)
	}
}

func TestCostRoundsOncePerRequest(t *testing.T) {
	p := policy.Price{InputPerMTok: 150_000, OutputPerMTok: 600_000, CachedInputPerMTok: 75_000}
	tests := []struct {
		name string
		u    filters.Usage
		want int64
	}{
		{"nothing", filters.Usage{}, 0},
		{"one million input tokens", filters.Usage{PromptTokens: 1_000_000}, 150_000},
		{"cached tokens at the cached price", filters.Usage{PromptTokens: 1_000_000, CachedTokens: 1_000_000}, 75_000},
		{"2.1 micro-dollars round to 2", filters.Usage{PromptTokens: 10, CompletionTokens: 1}, 2},
		{"half a micro-dollar rounds up", filters.Usage{CompletionTokens: 1, CachedTokens: 0, PromptTokens: 0}, 1},
		{"output", filters.Usage{CompletionTokens: 1000}, 600},
	}
	for _, tt := range tests {
		if got := Cost(p, tt.u); got != tt.want {
			t.Errorf("%s: Cost = %d, want %d", tt.name, got, tt.want)
		}
	}
}
