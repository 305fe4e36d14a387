// Package healthcheck names each provider kind's active health check: a
// cheap call that needs the provider's key and costs no tokens. The
// health monitor sends it below the filters, so it lives beside the
// translators rather than in the translate filter.
package healthcheck

import (
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/anthropic"
	"github.com/switchyard/switchyard/translator/gemini"
	"github.com/switchyard/switchyard/translator/openai"
)

var checks = map[policy.Kind]func(*policy.Provider, string) translator.Upstream{
	policy.KindOpenAI:           openai.CheckRequest,
	policy.KindAzureOpenAI:      openai.CheckRequest,
	policy.KindOpenAICompatible: openai.CheckRequest,
	policy.KindAnthropic:        anthropic.CheckRequest,
	policy.KindGemini:           gemini.CheckRequest,
}

// Request returns the active health check of provider p with key (empty:
// none), a GET; false for a kind without one.
func Request(p *policy.Provider, key string) (translator.Upstream, bool) {
	if f := checks[p.Kind]; f != nil {
		return f(p, key), true
	}
	return translator.Upstream{}, false
}
