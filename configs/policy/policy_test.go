package policy_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
