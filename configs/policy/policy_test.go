package policy_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

var update = flag.Bool("update", false, "rewrite the expected errors of testdata/invalid")

const separator = "\n----------\n"

// TestInvalid loads each testdata/invalid/<case>.yaml (a policy file, a
// separator line, the expected error) and checks the error names the file,
// line, field and reason.
func TestInvalid(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(paths) == 0 {
		t.Fatal("no invalid cases")
	}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".yaml"), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			in, want, ok := strings.Cut(string(raw), separator)
			if !ok {
				t.Fatalf("%s has no separator", p)
			}
			want = strings.TrimSpace(want)
			_, err = policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(in + "\n")}})
			if err == nil {
				t.Fatalf("policy accepted; want %q", want)
			}
			if *update {
				if err := os.WriteFile(p, []byte(in+separator+err.Error()+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("got error\n  %v\nwant it to contain\n  %s", err, want)
			}
		})
	}
}

// TestShippedPolicies loads every policy the repository ships.
func TestShippedPolicies(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"../local", "../examples/real-providers", "testdata/valid"} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			p, err := policy.Load(dir)
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			if len(p.Models) == 0 || len(p.Routes) == 0 {
				t.Errorf("%s: %d models, %d routes", dir, len(p.Models), len(p.Routes))
			}
		})
	}
}

func TestCompileResolvesAndConverts(t *testing.T) {
	t.Parallel()
	p, err := policy.Load("testdata/valid")
	if err != nil {
		t.Fatal(err)
	}
	m := p.Model("cheap")
	if m == nil {
		t.Fatal("model cheap missing")
	}
	if got, want := m.Price, (policy.Price{InputPerMTok: 150_000, OutputPerMTok: 600_000, CachedInputPerMTok: 75_000, CacheWritePerMTok: 187_500, CacheWrite1hPerMTok: 187_500}); got != want {
		t.Errorf("price = %+v, want %+v (micro-USD per million tokens)", got, want)
	}
	if m.Upstream != "cheap-2024" || m.Provider.Name != "oa" || m.DefaultMaxTokens != 4096 {
		t.Errorf("model = %+v", m)
	}
	if !m.Caps.Has(policy.CapTools|policy.CapStream) || m.Caps.Has(policy.CapVision) {
		t.Errorf("caps = %b", m.Caps)
	}
	pr := p.Provider("az")
	if pr.Host != "res.openai.azure.com" || pr.Port != 443 || !pr.TLS || pr.Authority() != "res.openai.azure.com" || pr.Cluster != "provider_az" {
		t.Errorf("azure provider = %+v", pr)
	}
	if got := p.Provider("oa").Authority(); got != "127.0.0.1:9101" {
		t.Errorf("authority = %q", got)
	}
	if r := p.Route("/v1/models/cheap"); r == nil || r.API != policy.APIModels {
		t.Errorf("models sub-path route = %+v", r)
	}
	if r := p.Route("/v1/chat/completions"); r == nil || r.Attempts != 3 || len(r.Filters) != 3 || r.Filters[2].Name != "quota" || r.Filters[2].Args["store_timeout"] != "250ms" {
		t.Errorf("chat route = %+v", r)
	}
	if p.Gateway.MaxRequestBytes != 2<<20 || p.Gateway.ListenPort != 8080 {
		t.Errorf("gateway = %+v", p.Gateway)
	}
	v2, _ := policy.Load("testdata/valid")
	if p.Version != v2.Version || len(p.Version) != 12 {
		t.Errorf("version %q is not stable", p.Version)
	}
}

func TestKeysAndAllowlists(t *testing.T) {
	t.Parallel()
	p, err := policy.Load("testdata/valid")
	if err != nil {
		t.Fatal(err)
	}
	var h [32]byte
	copy(h[:], []byte{0x4f, 0xf4, 0x44, 0xb1})
	tests := []struct {
		name  string
		key   string
		model string
		want  bool
	}{
		{"tenant allowlist allows", "wide", "cheap", true},
		{"tenant allowlist refuses", "wide", "strong", false},
		{"key allowlist narrows", "narrow", "cheap", false},
		{"key allowlist allows", "narrow", "embed", true},
	}
	keys := map[string]*policy.Key{}
	for _, tn := range p.Tenants {
		for _, k := range tn.Keys {
			keys[k.Name] = k
		}
	}
	for _, tt := range tests {
		if got := keys[tt.key].Allows(tt.model); got != tt.want {
			t.Errorf("%s: Allows(%q) = %v, want %v", tt.name, tt.model, got, tt.want)
		}
	}
	if k := p.KeyByHash(keys["wide"].Hash); k == nil || k.Tenant.Name != "acme" || k.App != "web" {
		t.Errorf("KeyByHash = %+v", k)
	}
	if p.KeyByHash(h) != nil {
		t.Error("a made-up hash matched a key")
	}
}

func TestGatewayInOneFileOnly(t *testing.T) {
	t.Parallel()
	_, err := policy.Compile([]policy.File{
		{Name: "a.yaml", Data: []byte("gateway: {listen: 127.0.0.1:1}\n")},
		{Name: "b.yaml", Data: []byte("gateway: {listen: 127.0.0.1:2}\n")},
	})
	if err == nil || !strings.Contains(err.Error(), "b.yaml:1:10: gateway: the gateway section may appear in one file only") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzCompile(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*/*.yaml")
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		in, _, _ := strings.Cut(string(b), separator)
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := policy.Compile([]policy.File{{Name: "f.yaml", Data: []byte(in)}})
		if err != nil {
			if p != nil {
				t.Fatal("a refused policy came with a value")
			}
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, m := range p.Models {
			if m.Provider == nil || p.Model(m.Name) != m || len(m.Deployments) == 0 || m.Deployments[0] != m {
				t.Fatalf("model %q not resolved", m.Name)
			}
			providers := map[*policy.Provider]bool{}
			for _, d := range m.Deployments {
				if d.Name != m.Name || d.ContextWindow != m.ContextWindow || d.Caps != m.Caps || providers[d.Provider] || len(d.Deployments) != len(m.Deployments) {
					t.Fatalf("deployment of %q on %v differs from the model, or shares its provider", m.Name, d.Provider)
				}
				providers[d.Provider] = true
			}
		}
		for alias := range p.Aliases() {
			if r := p.Resolve(alias); r.Alias != alias || (r.Model == nil) != r.Auto {
				t.Fatalf("alias %q resolves to %+v", alias, r)
			}
		}
		for _, pt := range p.Patterns {
			for _, m := range pt.Known() {
				if m.Provider != pt.Provider || m.Pattern != pt || len(m.Deployments) != 1 || m.Deployments[0] != m || m.PriceSource != policy.PriceCatalog {
					t.Fatalf("catalog model %q of pattern %q is not served by it", m.Name, pt.Match)
				}
			}
		}
	})
}

// TestPlainHTTPProviders: http:// is taken for loopback hosts and, when the
// provider says insecure: true, for any host; TestInvalid holds the refusal.
func TestPlainHTTPProviders(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{
		`{name: p, kind: openai, base_url: "http://127.0.0.1:9101"}`,
		`{name: p, kind: openai, base_url: "http://localhost:9101"}`,
		`{name: p, kind: openai, base_url: "http://[::1]:9101"}`,
		`{name: p, kind: openai, base_url: "http://vllm.internal.example:8000", insecure: true}`,
		`{name: p, kind: openai, base_url: "https://api.openai.com"}`,
	} {
		src := "providers:\n  - " + provider + "\nmodels:\n  - {name: m, provider: p, context_window: 1000, max_output_tokens: 10, price_usd_per_mtok: {input: 1, output: 1}}\nroutes:\n  - {name: chat, path: /v1/chat/completions, api: chat_completions}\n"
		if _, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(src)}}); err != nil {
			t.Errorf("%s refused: %v", provider, err)
		}
	}
}

// TestRouteTimeouts: an unset timeout takes its default, and a stream is
// bounded like any answer unless the route says otherwise.
func TestRouteTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		settings            string
		wantAnswer, wantStr time.Duration
	}{
		{"defaults", "", policy.DefaultAnswerTimeout, policy.DefaultAnswerTimeout},
		{"stream bound follows answer_timeout", ", answer_timeout: 2m", 2 * time.Minute, 2 * time.Minute},
		{"stream bound of its own", ", answer_timeout: 2m, stream_timeout: 30m", 2 * time.Minute, 30 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "routes:\n  - {name: chat, path: /v1/chat/completions, api: chat_completions" + tt.settings + "}\n"
			p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(src)}})
			if err != nil {
				t.Fatal(err)
			}
			r := p.Route("/v1/chat/completions")
			if r.AnswerTimeout != tt.wantAnswer || r.StreamTimeout != tt.wantStr {
				t.Errorf("answer_timeout %v, stream_timeout %v; want %v, %v", r.AnswerTimeout, r.StreamTimeout, tt.wantAnswer, tt.wantStr)
			}
		})
	}
}

// TestKeyAllowsWithinItsTenant: a key's model list narrows its tenant's and
// never widens it.
func TestKeyAllowsWithinItsTenant(t *testing.T) {
	t.Parallel()
	tenant := &policy.Tenant{Name: "t", Models: map[string]bool{"a": true}}
	tests := []struct {
		key   *policy.Key
		model string
		want  bool
	}{
		{&policy.Key{Tenant: tenant, Models: map[string]bool{"a": true, "b": true}}, "b", false},
		{&policy.Key{Tenant: tenant, Models: map[string]bool{"a": true, "b": true}}, "a", true},
		{&policy.Key{Tenant: tenant}, "a", true},
		{&policy.Key{Tenant: &policy.Tenant{Name: "open"}, Models: map[string]bool{"b": true}}, "b", true},
		{&policy.Key{Tenant: &policy.Tenant{Name: "open"}, Models: map[string]bool{"b": true}}, "a", false},
	}
	for _, tt := range tests {
		if got := tt.key.Allows(tt.model); got != tt.want {
			t.Errorf("key %v of tenant %v: Allows(%q) = %v, want %v", tt.key.Models, tt.key.Tenant.Models, tt.model, got, tt.want)
		}
	}
}

// TestHealthProfile: gateway.health.profile picks the preset the other
// keys are decoded over.
func TestHealthProfile(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "g.yaml", Data: []byte("gateway:\n  health:\n    profile: lenient\n    breaker: {open_timeout: 90s}\n")}})
	if err != nil {
		t.Fatal(err)
	}
	h := p.Gateway.Health
	if h.Profile != "lenient" || h.Window != 5*time.Minute || h.Healthy.ErrorRate != 0.05 || h.Unavailable.ErrorRate != 0.15 ||
		h.DegradedWeight != 0.5 || h.Breaker.OpenTimeout != 90*time.Second || h.Breaker.HalfOpenProbes != 2 {
		t.Errorf("lenient with a longer open breaker compiled to %+v", h)
	}
	d := policy.DefaultHealthConfig()
	if b := d.Breaker; b.ConsecutiveFailures != 5 || b.OpenTimeout != 60*time.Second || b.HalfOpenProbes != 2 {
		t.Errorf("breaker defaults %+v; the specification says 5 failures, 60 s open, 2 probes", b)
	}
	if c := d.Checks; c.Interval != 10*time.Second || c.Timeout <= 0 || c.Timeout > c.Interval {
		t.Errorf("active check defaults %+v; the specification checks idle providers every 10 s", c)
	}
}

// TestDeployments: entries sharing a name are one model on several
// deployments: each with its provider, upstream, price, weight and limits,
// all sharing the first's model-wide fields and fallbacks.
func TestDeployments(t *testing.T) {
	t.Parallel()
	p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(`
providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:9101"}
  - {name: east, kind: azure_openai, base_url: "http://127.0.0.1:9102", api_version: "2024-10-21"}
  - {name: west, kind: azure_openai, base_url: "http://127.0.0.1:9103", api_version: "2024-10-21"}
models:
  - name: gpt-4o
    provider: openai
    context_window: 128000
    max_output_tokens: 16384
    capabilities: [chat, tools]
    price_usd_per_mtok: {input: 2.5, output: 10}
    balance: least_in_flight
    weight: 3
    fallback: [small]
  - {name: gpt-4o, provider: east, upstream: gpt4o-east, price_usd_per_mtok: {input: 2.75, output: 11}, limits: {tokens_per_minute: 30000}}
  - {name: gpt-4o, provider: west, weight: 0, capabilities: [tools, chat], context_window: 128000}
  - {name: small, provider: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Models) != 2 {
		t.Fatalf("%d models, want 2 (gpt-4o and small)", len(p.Models))
	}
	m := p.Model("gpt-4o")
	if len(m.Deployments) != 3 || m.Deployments[0] != m {
		t.Fatalf("deployments %v", m.Deployments)
	}
	tests := []struct {
		provider, upstream string
		price              policy.Price
		weight, tpm        int
	}{
		{"openai", "gpt-4o", policy.Price{InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000, CachedInputPerMTok: 2_500_000, CacheWritePerMTok: 2_500_000, CacheWrite1hPerMTok: 2_500_000}, 3, 0},
		{"east", "gpt4o-east", policy.Price{InputPerMTok: 2_750_000, OutputPerMTok: 11_000_000, CachedInputPerMTok: 2_750_000, CacheWritePerMTok: 2_750_000, CacheWrite1hPerMTok: 2_750_000}, 1, 30000},
		{"west", "gpt-4o", policy.Price{InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000, CachedInputPerMTok: 2_500_000, CacheWritePerMTok: 2_500_000, CacheWrite1hPerMTok: 2_500_000}, 0, 0},
	}
	for i, tt := range tests {
		d := m.Deployments[i]
		if d.Provider.Name != tt.provider || d.Upstream != tt.upstream || d.Price != tt.price || d.Weight != tt.weight || d.TokensPerMinute != tt.tpm {
			t.Errorf("deployment %d = %s/%s price %+v weight %d tpm %d; want %+v", i, d.Provider.Name, d.Upstream, d.Price, d.Weight, d.TokensPerMinute, tt)
		}
		if d.ContextWindow != 128000 || d.MaxOutputTokens != 16384 || d.Balance != policy.BalanceLeastInFlight ||
			len(d.Fallback) != 1 || d.Fallback[0] != p.Model("small") || len(d.Deployments) != 3 || d.Limited() != (tt.tpm > 0) {
			t.Errorf("deployment %d does not share the model's fields: %+v", i, d)
		}
	}
	if s := p.Model("small"); len(s.Deployments) != 1 || s.Balance != policy.BalanceWeighted || s.Weight != 1 {
		t.Errorf("a model of one deployment: %+v", s)
	}
}
