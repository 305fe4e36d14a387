package policy_test

import (
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

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
