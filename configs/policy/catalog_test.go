package policy_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

// compile compiles one policy file, failing the test on a problem.
func compile(t *testing.T, yaml string) *policy.Policy {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(yaml)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const providers = `
providers:
  - {name: openai, kind: openai, base_url: "https://api.openai.com"}
  - {name: anthropic, kind: anthropic, base_url: "https://api.anthropic.com"}
  - {name: azure, kind: azure_openai, base_url: "https://r.openai.azure.com", api_version: "2024-10-21"}
  - {name: vllm, kind: openai_compatible, dialect: vllm, base_url: "http://127.0.0.1:8000"}
`

func TestCatalogFillsModels(t *testing.T) {
	t.Parallel()
	p := compile(t, providers+`
models:
  - {name: claude-opus-5-5, provider: anthropic}
  - {name: gpt-6.2-sol, provider: openai, quality: 0.5, price_usd_per_mtok: {input: 1, output: 2}}
  - {name: gpt-6.2-sol, provider: azure, upstream: my-deployment}
  - {name: house-default, provider: anthropic, catalog: claude-haiku-5-5}
  - {name: gpt-4o, provider: vllm}
catalog:
  - {name: in-house, vendor: acme, context_window: 4096, max_output_tokens: 1024, price_usd_per_mtok: {input: 0, output: 0}}
  - {name: gpt-4o, vendor: openai, context_window: 64000, max_output_tokens: 1000, price_usd_per_mtok: {input: 9, output: 9}}
`)
	tests := []struct {
		name          string
		model         *policy.Model
		wantUpstream  string
		wantContext   int
		wantOutput    int
		wantPrice     policy.Price
		wantQuality   float64
		wantVendor    string
		wantWebSearch int64
	}{
		{
			name: "everything from the catalog", model: p.Model("claude-opus-5-5"),
			wantUpstream: "claude-opus-5-5", wantContext: 1_000_000, wantOutput: 128_000,
			wantPrice: policy.Price{InputPerMTok: 4_000_000, OutputPerMTok: 20_000_000, CachedInputPerMTok: 200_000,
				CacheWritePerMTok: 5_000_000, CacheWrite1hPerMTok: 8_000_000},
			wantQuality: 0.97, wantVendor: "anthropic", wantWebSearch: 10_000,
		},
		{
			name: "the policy's price and quality win", model: p.Model("gpt-6.2-sol"),
			wantUpstream: "gpt-6.2-sol", wantContext: 1_050_000, wantOutput: 128_000,
			wantPrice: policy.Price{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000, CachedInputPerMTok: 1_000_000,
				CacheWritePerMTok: 1_000_000, CacheWrite1hPerMTok: 1_000_000},
			wantQuality: 0.5, wantVendor: "openai",
		},
		{
			name: "a second deployment keeps the first's price, under its own upstream", model: p.Model("gpt-6.2-sol").Deployments[1],
			wantUpstream: "my-deployment", wantContext: 1_050_000, wantOutput: 128_000,
			wantPrice: policy.Price{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000, CachedInputPerMTok: 1_000_000,
				CacheWritePerMTok: 1_000_000, CacheWrite1hPerMTok: 1_000_000},
			wantQuality: 0.5, wantVendor: "openai",
		},
		{
			name: "a model named after a catalog entry with catalog:", model: p.Model("house-default"),
			wantUpstream: "claude-haiku-5-5", wantContext: 1_000_000, wantOutput: 128_000,
			wantPrice: policy.Price{InputPerMTok: 100_000, OutputPerMTok: 500_000, CachedInputPerMTok: 10_000,
				CacheWritePerMTok: 125_000, CacheWrite1hPerMTok: 200_000,
				LongAbove: 100_000, Long: policy.Rates{InputPerMTok: 500_000, OutputPerMTok: 2_500_000, CachedInputPerMTok: 50_000,
					CacheWritePerMTok: 625_000, CacheWrite1hPerMTok: 1_000_000}},
			wantQuality: 0.78, wantVendor: "anthropic", wantWebSearch: 10_000,
		},
		{
			name: "a policy's catalog entry replaces the shipped one", model: p.Model("gpt-4o"),
			wantUpstream: "gpt-4o", wantContext: 64_000, wantOutput: 1000,
			wantPrice: policy.Price{InputPerMTok: 9_000_000, OutputPerMTok: 9_000_000, CachedInputPerMTok: 9_000_000,
				CacheWritePerMTok: 9_000_000, CacheWrite1hPerMTok: 9_000_000},
			wantQuality: 0.5, wantVendor: "openai",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.model
			if m == nil {
				t.Fatal("model missing")
			}
			if m.Upstream != tt.wantUpstream || m.ContextWindow != tt.wantContext || m.MaxOutputTokens != tt.wantOutput {
				t.Errorf("upstream %q, context %d, output %d; want %q, %d, %d", m.Upstream, m.ContextWindow, m.MaxOutputTokens, tt.wantUpstream, tt.wantContext, tt.wantOutput)
			}
			if m.Price != tt.wantPrice || m.PriceSource != policy.PriceCatalog {
				t.Errorf("price %+v (%s), want %+v (catalog)", m.Price, m.PriceSource, tt.wantPrice)
			}
			if m.Quality != tt.wantQuality || m.Vendor != tt.wantVendor || m.ToolPrices["web_search"] != tt.wantWebSearch {
				t.Errorf("quality %v, vendor %q, web search %d; want %v, %q, %d", m.Quality, m.Vendor, m.ToolPrices["web_search"], tt.wantQuality, tt.wantVendor, tt.wantWebSearch)
			}
		})
	}
	if e := p.Catalog["in-house"]; e == nil || e.Vendor != "acme" {
		t.Errorf("the policy's own catalog entry: %+v", e)
	}
}

func TestPriceTiers(t *testing.T) {
	t.Parallel()
	p := policy.Price{InputPerMTok: 2_000_000, OutputPerMTok: 10_000_000, CachedInputPerMTok: 100_000,
		CacheWritePerMTok: 2_500_000, CacheWrite1hPerMTok: 4_000_000,
		LongAbove: 272_000, Long: policy.Rates{InputPerMTok: 4_000_000, OutputPerMTok: 15_000_000, CachedInputPerMTok: 200_000,
			CacheWritePerMTok: 5_000_000, CacheWrite1hPerMTok: 8_000_000}}
	tests := []struct {
		name       string
		tokens     policy.Tokens
		wantMicros int64
	}{
		{name: "short prompt", tokens: policy.Tokens{Prompt: 100_000, CacheRead: 50_000, Completion: 1000}, wantMicros: 100_000 + 5000 + 10_000},
		{name: "at the threshold: still short", tokens: policy.Tokens{Prompt: 272_000}, wantMicros: 544_000},
		{name: "above: every token at the long rates", tokens: policy.Tokens{Prompt: 300_000, CacheRead: 100_000, Completion: 1000}, wantMicros: 800_000 + 20_000 + 15_000},
		{name: "writes at their rates, reads and the rest at theirs",
			tokens:     policy.Tokens{Prompt: 100_000, CacheRead: 40_000, CacheWrite: 30_000, CacheWrite1h: 20_000, Completion: 1000},
			wantMicros: 10_000*2 + 40_000/10 + 30_000*5/2 + 20_000*4 + 10_000},
		{name: "a long prompt's writes at the long tier's", tokens: policy.Tokens{Prompt: 300_000, CacheWrite: 100_000, CacheWrite1h: 100_000},
			wantMicros: 100_000*4 + 100_000*5 + 100_000*8},
		{name: "writes beyond the prompt: the dearest count, the cheap reads are cut",
			tokens: policy.Tokens{Prompt: 1000, CacheRead: 800, CacheWrite: 500, CacheWrite1h: 400}, wantMicros: (400*4_000_000 + 500*2_500_000 + 100*100_000 + 500_000) / 1_000_000},
		{name: "rounds half up once", tokens: policy.Tokens{Prompt: 1, CacheWrite: 1}, wantMicros: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Micros(tt.tokens); got != tt.wantMicros {
				t.Errorf("Micros = %d, want %d", got, tt.wantMicros)
			}
		})
	}
	// The ceiling reserves the long tier for an estimate within a fifth of
	// the threshold, since the provider's count may cross it, and the
	// whole prompt at the dearest write rate: any of it may be written.
	if got, want := p.Ceiling(250_000, 1000), int64(2_000_000+15_000); got != want {
		t.Errorf("Ceiling near the threshold = %d, want %d (the long tier, its 1-hour writes)", got, want)
	}
	if got, want := p.Ceiling(100_000, 1000), int64(400_000+10_000); got != want {
		t.Errorf("Ceiling well below = %d, want %d", got, want)
	}
	// Writes no dearer than input leave the ceiling at the input price.
	plain := policy.Price{InputPerMTok: 2_000_000, OutputPerMTok: 10_000_000, CacheWritePerMTok: 2_000_000, CacheWrite1hPerMTok: 1_000_000}
	if got, want := plain.Ceiling(100_000, 1000), int64(200_000+10_000); got != want {
		t.Errorf("Ceiling without a write premium = %d, want %d", got, want)
	}
}

// TestShippedCatalog: every model of the shipped catalog is cited in
// docs/MODELS.md, where its figures are dated.
func TestShippedCatalog(t *testing.T) {
	t.Parallel()
	p := compile(t, "")
	doc, err := os.ReadFile("../../docs/MODELS.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Catalog) < 15 {
		t.Fatalf("the catalog has %d models", len(p.Catalog))
	}
	for name, e := range p.Catalog {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/MODELS.md does not cite %s", name)
		}
		if !strings.HasPrefix(e.Source, "https://") {
			t.Errorf("%s: source %q is not a page", name, e.Source)
		}
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	yaml := providers + `
catalog:
  - {name: old-model, vendor: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}, deprecated_on: 2026-01-01, retired_on: 2026-06-01, successor: gpt-6.2-sol}
models:
  - {name: old-model, provider: openai}
  - {name: gpt-6.2-sol, provider: openai}
  - {match: "claude-*", provider: anthropic}
aliases:
  - {name: legacy, to: claude-3-5-sonnet}
`
	p := compile(t, yaml)
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	tests := []struct {
		name string
		now  time.Time
		want []string
	}{
		{name: "before any date", now: day("2025-01-01"), want: nil},
		{name: "deprecated", now: day("2026-02-01"), want: []string{
			"policy.yaml:11:5: models[old-model]: old-model is deprecated since 2026-01-01 (successor: gpt-6.2-sol); its vendor retires it on 2026-06-01",
			"policy.yaml:15:24: aliases[legacy].to: claude-3-5-sonnet was retired by its vendor on 2025-10-22 (successor: claude-sonnet-5-5); its requests are refused, naming the successor (gateway.retired_models: refuse)",
		}},
		{name: "retired", now: day("2026-12-05"), want: []string{
			"policy.yaml:11:5: models[old-model]: old-model was retired by its vendor on 2026-06-01 (successor: gpt-6.2-sol); its requests are refused, naming the successor (gateway.retired_models: refuse)",
			"policy.yaml:15:24: aliases[legacy].to: claude-3-5-sonnet was retired by its vendor on 2025-10-22 (successor: claude-sonnet-5-5); its requests are refused, naming the successor (gateway.retired_models: refuse)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range p.Warnings(tt.now) {
				got = append(got, w.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
