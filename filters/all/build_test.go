package all_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	_ "github.com/switchyard/switchyard/filters/all"
)

// noKeys resolves every key as a variable that is unset.
type noKeys struct{}

func (noKeys) Resolve(policy.SecretRef) (string, error) { return "", nil }

// TestBuildReportsRootCausesOnce: with every provider key unset, building
// the chains names each provider's variable once, where it is first met,
// and nothing that follows from it (a usage filter left without the
// translate filter it reads).
func TestBuildReportsRootCausesOnce(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(`
providers:
  - {name: openai, kind: openai, base_url: "https://api.openai.com", api_key: {env: OPENAI_API_KEY}}
  - {name: anthropic, kind: anthropic, base_url: "https://api.anthropic.com", api_key: {env: ANTHROPIC_API_KEY}}
models:
  - {name: gpt-6.2-sol, provider: openai}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, quota, translate, usage]}
  - {name: messages, path: /v1/messages, api: messages, filters: [auth, router, quota, translate, usage]}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = filters.Build(filters.Deps{Policy: p, Secrets: noKeys{}})
	if err == nil {
		t.Fatal("built chains without provider keys")
	}
	want := []string{
		"p.yaml:8:100: routes[chat].filters[3]: provider openai: api key: environment variable OPENAI_API_KEY is unset or empty",
		"p.yaml:8:100: routes[chat].filters[3]: provider anthropic: api key: environment variable ANTHROPIC_API_KEY is unset or empty",
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", err, strings.Join(want, "\n"))
	}
}
