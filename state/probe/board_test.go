package probe

import (
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

// TestBoardFollowsThePolicy: a verdict routes only while the policy
// still probes the provider and the model still claims the capability.
func TestBoardFollowsThePolicy(t *testing.T) {
	failing := func(provider, model string, caps ...string) Record {
		m := ModelResults{Model: model}
		for _, c := range caps {
			m.Capabilities = append(m.Capabilities, Result{Capability: c, Verdict: Failing})
		}
		return Record{Provider: provider, Models: []ModelResults{m}}
	}
	const base = `providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:9101", probes: {daily_cap_usd: 1, models: [gpt]}}
  - {name: azure, kind: azure_openai, api_version: "2024-10-21", base_url: "http://127.0.0.1:9102"}
models:
  - {name: gpt, provider: openai, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, tools, json], price_usd_per_mtok: {input: 1, output: 2}}
  - {name: mini, provider: openai, context_window: 8000, max_output_tokens: 1000, capabilities: [chat, tools], price_usd_per_mtok: {input: 1, output: 2}}
  - {name: gpt, provider: azure, price_usd_per_mtok: {input: 1, output: 2}}
`
	pol, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(base)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name            string
		rec             Record
		provider, model string
		want            policy.Capability
	}{
		{name: "a claimed capability failing", rec: failing("openai", "gpt", "tools", "json"), provider: "openai", model: "gpt",
			want: policy.CapTools | policy.CapJSON},
		{name: "a capability no longer claimed", rec: failing("openai", "gpt", "vision", "tools"), provider: "openai", model: "gpt",
			want: policy.CapTools},
		{name: "a model no longer probed", rec: failing("openai", "mini", "tools"), provider: "openai", model: "mini"},
		{name: "a provider that does not probe", rec: failing("azure", "gpt", "tools"), provider: "azure", model: "gpt"},
		{name: "a provider the policy lost", rec: failing("gone", "gpt", "tools"), provider: "gone", model: "gpt"},
		{name: "the same model on another provider", rec: failing("openai", "gpt", "tools"), provider: "azure", model: "gpt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBoard()
			b.set(pol, []Record{tt.rec})
			if got := b.Failing(tt.provider, tt.model); got != tt.want {
				t.Errorf("failing %b, want %b", got, tt.want)
			}
		})
	}
}
