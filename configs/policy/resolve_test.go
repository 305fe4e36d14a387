package policy_test

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

const patterned = providers + `
models:
  - {name: gpt-4o, provider: openai}
  - {match: "claude-*", provider: anthropic, unpriced: worst_case, price_usd_per_mtok: {input: 15, output: 75}, max_output_tokens: 64000}
  - {match: "gpt-*", provider: openai}
  - {match: "openai/*", provider: openai, unpriced: dearest}
  - {match: "*", provider: vllm, unpriced: worst_case, price_usd_per_mtok: {input: 0, output: 0}, capabilities: [chat, stream]}
aliases:
  - {name: smart, to: sonnet}
  - {name: sonnet, to: claude-sonnet-5-5}
  - {name: team-default, to: gpt-4o}
  - {name: surprise-me, to: auto}
  - {name: tomorrow, to: claude-opus-6}
`

func TestResolve(t *testing.T) {
	t.Parallel()
	p := compile(t, patterned)
	worst := policy.Price{InputPerMTok: 15_000_000, OutputPerMTok: 75_000_000, CachedInputPerMTok: 15_000_000, CacheWritePerMTok: 15_000_000, CacheWrite1hPerMTok: 15_000_000}
	tests := []struct {
		name         string
		in           string
		wantModel    string // "" for none
		wantProvider string
		wantUpstream string
		wantSource   policy.PriceSource
		wantSeries   string
		wantAlias    string
		wantAuto     bool
		wantRefused  string
	}{
		{name: "a model of the policy", in: "gpt-4o", wantModel: "gpt-4o", wantProvider: "openai", wantUpstream: "gpt-4o", wantSource: policy.PriceCatalog, wantSeries: "gpt-4o"},
		{name: "a catalog model through a pattern", in: "claude-opus-5-5", wantModel: "claude-opus-5-5", wantProvider: "anthropic", wantUpstream: "claude-opus-5-5", wantSource: policy.PriceCatalog, wantSeries: "claude-opus-5-5"},
		{name: "a catalog model under its own upstream id", in: "claude-3-5-haiku", wantModel: "claude-3-5-haiku", wantProvider: "anthropic", wantUpstream: "claude-3-5-haiku-20241022", wantSource: policy.PriceCatalog, wantSeries: "claude-3-5-haiku"},
		{name: "an unknown model under an open pattern", in: "claude-opus-6", wantModel: "claude-opus-6", wantProvider: "anthropic", wantUpstream: "claude-opus-6", wantSource: policy.PricePattern, wantSeries: "claude-*"},
		{name: "an unknown model under a closed pattern", in: "gpt-9-ultra", wantRefused: "gpt-*"},
		{name: "a catalog model under a closed pattern", in: "gpt-6.2-sol", wantModel: "gpt-6.2-sol", wantProvider: "openai", wantUpstream: "gpt-6.2-sol", wantSource: policy.PriceCatalog, wantSeries: "gpt-6.2-sol"},
		{name: "a provider prefix is not sent upstream", in: "openai/gpt-7", wantModel: "openai/gpt-7", wantProvider: "openai", wantUpstream: "gpt-7", wantSource: policy.PriceEstimated, wantSeries: "openai/*"},
		{name: "a prefixed catalog model is the catalog's", in: "openai/gpt-6-luna", wantModel: "gpt-6-luna", wantProvider: "openai", wantUpstream: "gpt-6-luna", wantSource: policy.PriceCatalog, wantSeries: "gpt-6-luna"},
		{name: "the first pattern that matches decides", in: "llama-4", wantModel: "llama-4", wantProvider: "vllm", wantUpstream: "llama-4", wantSource: policy.PricePattern, wantSeries: "*"},
		{name: "a catch-all on an OpenAI-compatible server knows every vendor's models", in: "mistral-large-3", wantModel: "mistral-large-3", wantProvider: "vllm", wantUpstream: "mistral-large-latest", wantSource: policy.PriceCatalog, wantSeries: "mistral-large-3"},
		{name: "a name no upstream should see matches nothing", in: "claude-x\"}", wantModel: ""},
		{name: "an alias chain", in: "smart", wantModel: "claude-sonnet-5-5", wantProvider: "anthropic", wantUpstream: "claude-sonnet-5-5", wantSource: policy.PriceCatalog, wantSeries: "claude-sonnet-5-5", wantAlias: "smart"},
		{name: "an alias of a model", in: "team-default", wantModel: "gpt-4o", wantProvider: "openai", wantUpstream: "gpt-4o", wantSource: policy.PriceCatalog, wantSeries: "gpt-4o", wantAlias: "team-default"},
		{name: "an alias of a name only an open pattern serves", in: "tomorrow", wantModel: "claude-opus-6", wantProvider: "anthropic", wantUpstream: "claude-opus-6", wantSource: policy.PricePattern, wantSeries: "claude-*", wantAlias: "tomorrow"},
		{name: "an alias of auto", in: "surprise-me", wantAlias: "surprise-me", wantAuto: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := p.Resolve(tt.in)
			if r.Alias != tt.wantAlias || r.Auto != tt.wantAuto {
				t.Errorf("alias %q, auto %v; want %q, %v", r.Alias, r.Auto, tt.wantAlias, tt.wantAuto)
			}
			if got := ""; r.Refused != nil {
				got = r.Refused.Match
				if got != tt.wantRefused {
					t.Errorf("refused by %q, want %q", got, tt.wantRefused)
				}
			} else if tt.wantRefused != "" {
				t.Errorf("not refused, want refused by %q", tt.wantRefused)
			}
			m := r.Model
			if (m == nil) != (tt.wantModel == "") {
				t.Fatalf("model %+v, want %q", m, tt.wantModel)
			}
			if m == nil {
				return
			}
			if m.Name != tt.wantModel || m.Provider.Name != tt.wantProvider || m.Upstream != tt.wantUpstream || m.PriceSource != tt.wantSource || m.Series() != tt.wantSeries {
				t.Errorf("got %s on %s as %q, %s, series %q; want %s on %s as %q, %s, series %q",
					m.Name, m.Provider.Name, m.Upstream, m.PriceSource, m.Series(), tt.wantModel, tt.wantProvider, tt.wantUpstream, tt.wantSource, tt.wantSeries)
			}
			if len(m.Deployments) != 1 || m.Deployments[0] != m {
				t.Errorf("deployments %v, want the model itself", m.Deployments)
			}
		})
	}
	// An unknown name is served at the pattern's limits and worst case.
	m := p.Resolve("claude-opus-6").Model
	if m.Price != worst || m.MaxOutputTokens != 64_000 || m.ContextWindow != 1_050_000 || !m.Caps.Has(policy.CapTools|policy.CapVision) || m.Pattern.Match != "claude-*" {
		t.Errorf("claude-opus-6: %+v", m)
	}
	if m := p.Resolve("llama-4").Model; m.Caps.Has(policy.CapTools) || m.Price != (policy.Price{}) {
		t.Errorf("llama-4 under the catch-all: caps %b, price %+v; want chat and stream, free as stated", m.Caps, m.Price)
	}
}

// TestDearest: unpriced: dearest charges a name the catalog does not know
// at the highest of each rate among the catalog models the pattern
// matches, the long tiers included.
func TestDearest(t *testing.T) {
	t.Parallel()
	p := compile(t, patterned)
	got := p.Resolve("openai/gpt-7").Model.Price
	// gpt-6.2-astra's long tier; gpt-4o's cached input.
	want := policy.Price{InputPerMTok: 16_000_000, OutputPerMTok: 60_000_000, CachedInputPerMTok: 1_250_000, CacheWritePerMTok: 20_000_000, CacheWrite1hPerMTok: 20_000_000}
	if got != want {
		t.Errorf("dearest = %+v, want %+v", got, want)
	}
}

func TestMayServe(t *testing.T) {
	t.Parallel()
	p := compile(t, patterned+`
tenants:
  - name: acme
    models: [team-default, "claude-*"]
    keys:
      - {name: k, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}
      - {name: narrow, sha256: 8344ba305f5960e08ac7d05fea01b29641b05eab902ba5e23b35b37bd53effec, models: [claude-opus-5-5]}
`)
	tenant := p.Tenants[0]
	wide, narrow := tenant.Keys[0], tenant.Keys[1]
	tests := []struct {
		name  string
		key   *policy.Key
		model string
		want  bool
	}{
		{name: "by the alias the tenant lists", key: wide, model: "team-default", want: true},
		{name: "the alias's model under its own name", key: wide, model: "gpt-4o", want: false},
		{name: "by the pattern the tenant lists", key: wide, model: "claude-opus-6", want: true},
		{name: "a catalog model under that pattern", key: wide, model: "claude-haiku-5-5", want: true},
		{name: "a pattern the tenant does not list", key: wide, model: "gpt-6.2-sol", want: false},
		{name: "a key narrower than its tenant", key: narrow, model: "claude-opus-5-5", want: true},
		{name: "outside the key's list", key: narrow, model: "claude-haiku-5-5", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := p.Resolve(tt.model)
			if got := policy.MayServe(tt.key, tenant, r.Model, r.Alias); got != tt.want {
				t.Errorf("MayServe(%s) = %v, want %v", tt.model, got, tt.want)
			}
		})
	}
}

func TestSuccessor(t *testing.T) {
	t.Parallel()
	p := compile(t, providers+`
catalog:
  - {name: a-1, vendor: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}, retired_on: 2025-01-01, successor: a-2}
  - {name: a-2, vendor: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}, retired_on: 2026-01-01, successor: a-3}
  - {name: a-3, vendor: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}
  - {name: b-1, vendor: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}, retired_on: 2025-01-01, successor: b-2}
  - {name: b-2, vendor: acme, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}
models:
  - {name: a-1, provider: openai}
  - {name: b-1, provider: openai}
  - {match: "a-*", provider: openai}
`)
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	tests := []struct {
		name, model string
		now         time.Time
		want        string
	}{
		{name: "the successor while it serves", model: "a-1", now: day("2025-06-01"), want: "a-2"},
		{name: "past a retired successor", model: "a-1", now: day("2026-06-01"), want: "a-3"},
		{name: "a successor the policy does not serve", model: "b-1", now: day("2026-06-01"), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.Successor(p.Model(tt.model), func(m *policy.Model) bool { return m.RetiredAt(tt.now) })
			if name := ""; got != nil {
				name = got.Name
				if name != tt.want {
					t.Errorf("successor %q, want %q", name, tt.want)
				}
			} else if tt.want != "" {
				t.Errorf("no successor, want %q", tt.want)
			}
		})
	}
}
