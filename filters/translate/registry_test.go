package translate

import (
	"fmt"
	"slices"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/openai"
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
	for _, d := range openai.Dialects() {
		if d != "" {
			known = append(known, string(d))
		}
	}
	slices.Sort(known)
	if got := policy.Dialects(); !slices.Equal(got, known) {
		t.Errorf("policy accepts dialects %v, the translator knows %v", got, known)
	}
}

// TestForPicksTheSchemaPair: each client API reaches each kind through
// the translator of its pair of schemas; same-protocol traffic passes
// through.
func TestForPicksTheSchemaPair(t *testing.T) {
	tests := []struct {
		api  policy.API
		kind policy.Kind
		want string
	}{
		{policy.APIResponses, policy.KindOpenAI, "*openai.ResponsesPassthrough"},
		{policy.APIResponses, policy.KindAzureOpenAI, "*responses.Translator"},
		{policy.APIResponses, policy.KindOpenAICompatible, "*responses.Translator"},
		{policy.APIResponses, policy.KindAnthropic, "*responses.Translator"},
		{policy.APIResponses, policy.KindGemini, "*responses.Translator"},
		{policy.APIMessages, policy.KindAnthropic, "*anthropic.Passthrough"},
		{policy.APIMessages, policy.KindOpenAI, "*messages.Translator"},
		{policy.APIChatCompletions, policy.KindOpenAI, "*openai.Translator"},
	}
	for _, tt := range tests {
		p := &policy.Provider{Name: "p", Kind: tt.kind}
		got := fmt.Sprintf("%T", For(tt.api, translator.Target{Provider: p, Model: &policy.Model{Name: "m", Provider: p}}))
		if got != tt.want {
			t.Errorf("%s to %s: %s, want %s", tt.api, tt.kind, got, tt.want)
		}
	}
}

func TestCostRoundsOncePerRequest(t *testing.T) {
	m := &policy.Model{Price: policy.Price{InputPerMTok: 150_000, OutputPerMTok: 600_000, CachedInputPerMTok: 75_000,
		CacheWritePerMTok: 187_500, CacheWrite1hPerMTok: 300_000},
		ToolPrices: map[string]int64{"web_search": 10_000}}
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
		{"web searches at the model's price per use", filters.Usage{CompletionTokens: 1000, WebSearches: 3}, 600 + 30_000},
		{"cache writes at the price of their lifetime", filters.Usage{PromptTokens: 1_000_000, CachedTokens: 400_000, CacheWriteTokens: 200_000, CacheWrite1hTokens: 100_000},
			300_000*150_000/1_000_000 + 400_000*75_000/1_000_000 + 200_000*187_500/1_000_000 + 100_000*300_000/1_000_000},
	}
	for _, tt := range tests {
		if got := Cost(m, tt.u); got != tt.want {
			t.Errorf("%s: Cost = %d, want %d", tt.name, got, tt.want)
		}
	}
	// A model whose price per search the catalog does not know is charged
	// the stated worst case, never nothing.
	if got := Cost(&policy.Model{}, filters.Usage{WebSearches: 2}); got != 70_000 {
		t.Errorf("searches on a model without a per-use price: %d, want 70000", got)
	}
}

// TestCacheWrites: writes the provider broke down by lifetime keep their
// lifetime; those it did not are charged at the hour's rate when the
// request asked for an hour anywhere, else at the default lifetime's.
func TestCacheWrites(t *testing.T) {
	details := func(total, fiveMin, hour int) openaiapi.Usage {
		return openaiapi.Usage{PromptTokensDetails: &openaiapi.PromptTokensDetails{CacheWriteTokens: total, CacheWrite5mTokens: fiveMin, CacheWrite1hTokens: hour}}
	}
	tests := []struct {
		name                 string
		u                    openaiapi.Usage
		hour                 bool
		wantFiveMin, wantOne int
	}{
		{name: "no details", u: openaiapi.Usage{PromptTokens: 10}},
		{name: "broken down", u: details(30, 10, 20), wantFiveMin: 10, wantOne: 20},
		{name: "broken down, an hour asked: the breakdown stands", u: details(30, 10, 20), hour: true, wantFiveMin: 10, wantOne: 20},
		{name: "a total alone: the default lifetime", u: details(30, 0, 0), wantFiveMin: 30},
		{name: "a total alone, an hour asked: the hour's", u: details(30, 0, 0), hour: true, wantOne: 30},
		{name: "part broken down: the rest as a total alone", u: details(30, 5, 10), hour: true, wantFiveMin: 5, wantOne: 25},
		{name: "a breakdown above the total leaves no rest", u: details(10, 8, 6), wantFiveMin: 8, wantOne: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fiveMin, hour := cacheWrites(tt.u, tt.hour)
			if fiveMin != tt.wantFiveMin || hour != tt.wantOne {
				t.Errorf("got %d for 5 minutes, %d for an hour; want %d, %d", fiveMin, hour, tt.wantFiveMin, tt.wantOne)
			}
		})
	}
}
