package translate

import (
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/anthropic"
	"github.com/switchyard/switchyard/translator/gemini"
	openaix "github.com/switchyard/switchyard/translator/openai"
)

// translators maps a provider kind to the constructor of its translator.
var translators = map[policy.Kind]func(translator.Target) translator.Translator{
	policy.KindOpenAI:      func(t translator.Target) translator.Translator { return openaix.New(t) },
	policy.KindAzureOpenAI: func(t translator.Target) translator.Translator { return openaix.New(t) },
	policy.KindOpenAICompatible: func(t translator.Target) translator.Translator {
		return openaix.NewWithDialect(t, openaix.Dialect(t.Provider.Dialect))
	},
	policy.KindAnthropic: func(t translator.Target) translator.Translator { return anthropic.New(t) },
	policy.KindGemini:    func(t translator.Target) translator.Translator { return gemini.New(t) },
}

// For returns a translator for one attempt, or nil for a kind the gateway
// cannot translate to.
func For(t translator.Target) translator.Translator {
	if f := translators[t.Provider.Kind]; f != nil {
		return f(t)
	}
	return nil
}
