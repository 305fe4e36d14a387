package policy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestProbesCompile(t *testing.T) {
	t.Parallel()
	type probes struct {
		Interval, Timeout time.Duration
		DailyCapMicros    int64
		MaxTokens         int
		Models            []string // provider/model of each deployment probed
	}
	tests := []struct {
		name, probes string
		want         *probes
	}{
		{name: "off unless asked"},
		{name: "defaults: hourly, every chat model of the provider", probes: "probes: {daily_cap_usd: 0.05}",
			want: &probes{Interval: time.Hour, Timeout: 30 * time.Second, DailyCapMicros: 50_000, MaxTokens: 16,
				Models: []string{"openai/gpt-4o", "openai/mini"}}},
		{name: "a short interval bounds the default timeout", probes: "probes: {interval: 2s, daily_cap_usd: 0.000001}",
			want: &probes{Interval: 2 * time.Second, Timeout: 2 * time.Second, DailyCapMicros: 1, MaxTokens: 16,
				Models: []string{"openai/gpt-4o", "openai/mini"}}},
		{name: "the models named, on this provider", probes: "probes: {interval: 10m, timeout: 5s, daily_cap_usd: 1, max_tokens: 64, models: [mini]}",
			want: &probes{Interval: 10 * time.Minute, Timeout: 5 * time.Second, DailyCapMicros: 1_000_000, MaxTokens: 64,
				Models: []string{"openai/mini"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			y := "providers:\n" +
				"  - {name: openai, kind: openai, base_url: \"http://127.0.0.1:9101\", " + tt.probes + "}\n" +
				"  - {name: azure, kind: azure_openai, api_version: \"2024-10-21\", base_url: \"http://127.0.0.1:9102\"}\n" +
				"models:\n" +
				"  - {name: gpt-4o, provider: azure, context_window: 1000, max_output_tokens: 100, capabilities: [chat, tools], price_usd_per_mtok: {input: 1, output: 2}}\n" +
				"  - {name: gpt-4o, provider: openai, price_usd_per_mtok: {input: 1, output: 2}}\n" +
				"  - {name: mini, provider: openai, context_window: 1000, max_output_tokens: 100, capabilities: [chat, stream], price_usd_per_mtok: {input: 1, output: 2}}\n" +
				"  - {name: embed, provider: openai, context_window: 1000, capabilities: [embeddings], price_usd_per_mtok: {input: 1, output: 0}}\n"
			p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(y)}})
			if err != nil {
				t.Fatal(err)
			}
			if az := p.Provider("azure").Probes; az != nil {
				t.Errorf("azure probes %+v, want none", az)
			}
			got := p.Provider("openai").Probes
			if tt.want == nil {
				if got != nil {
					t.Errorf("probes %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no probes, want some")
			}
			g := &probes{Interval: got.Interval, Timeout: got.Timeout, DailyCapMicros: got.DailyCapMicros, MaxTokens: got.MaxTokens}
			for _, m := range got.Models {
				g.Models = append(g.Models, m.Provider.Name+"/"+m.Name)
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("probes (-want +got):\n%s", diff)
			}
		})
	}
}
