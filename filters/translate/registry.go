package translate

import (
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/anthropic"
	"github.com/switchyard/switchyard/translator/gemini"
	"github.com/switchyard/switchyard/translator/messages"
	"github.com/switchyard/switchyard/translator/openai"
	"github.com/switchyard/switchyard/translator/responses"
)

// translators maps a provider kind to the constructor of its chat
// translator: the (chat completions, provider) schema pairs.
var translators = map[policy.Kind]func(translator.Target) translator.Translator{
	policy.KindOpenAI:      func(t translator.Target) translator.Translator { return openai.New(t) },
	policy.KindAzureOpenAI: func(t translator.Target) translator.Translator { return openai.New(t) },
	policy.KindOpenAICompatible: func(t translator.Target) translator.Translator {
		return openai.NewWithDialect(t, openai.Dialect(t.Provider.Dialect))
	},
	policy.KindAnthropic: func(t translator.Target) translator.Translator { return anthropic.New(t) },
	policy.KindGemini:    func(t translator.Target) translator.Translator { return gemini.New(t) },
}

// For returns a translator for one attempt of a request of the client API
// api, or nil for a kind the gateway cannot translate to. A Messages
// client is served by Anthropic as it is, and by any other kind through
// that kind's chat translator; a Responses client by OpenAI as it is, and
// by any other kind (Azure and OpenAI-compatible servers included, see
// translator/responses/README.md) through its chat translator. Only
// Anthropic and Gemini count a Messages request's tokens (see [Counts]).
func For(api policy.API, t translator.Target) translator.Translator {
	chat := translators[t.Provider.Kind]
	if chat == nil {
		return nil
	}
	switch api {
	case policy.APICountTokens:
		switch t.Provider.Kind {
		case policy.KindAnthropic:
			return anthropic.NewCounter(t)
		case policy.KindGemini:
			return gemini.NewCounter(t)
		}
		return nil
	case policy.APIMessages:
		if t.Provider.Kind == policy.KindAnthropic {
			return anthropic.NewPassthrough(t)
		}
		return messages.New(chat(t), t)
	case policy.APIResponses:
		if t.Provider.Kind == policy.KindOpenAI {
			return openai.NewResponsesPassthrough(t)
		}
		return responses.New(chat(t), t)
	}
	return chat(t)
}

// Counts reports whether a provider kind counts the tokens of a Messages
// request itself (Anthropic's count_tokens, Gemini's countTokens); for
// the others the gateway estimates.
func Counts(k policy.Kind) bool { return k == policy.KindAnthropic || k == policy.KindGemini }
