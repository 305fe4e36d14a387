package tracing

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// The OpenTelemetry semantic conventions for generative AI (gen-ai-spans,
// development status): the names every GenAI-aware backend reads.
const (
	genaiOperation        = attribute.Key("gen_ai.operation.name")
	genaiProvider         = attribute.Key("gen_ai.provider.name")
	genaiRequestModel     = attribute.Key("gen_ai.request.model")
	genaiResponseModel    = attribute.Key("gen_ai.response.model")
	genaiResponseID       = attribute.Key("gen_ai.response.id")
	genaiFinishReasons    = attribute.Key("gen_ai.response.finish_reasons")
	genaiInputTokens      = attribute.Key("gen_ai.usage.input_tokens")
	genaiOutputTokens     = attribute.Key("gen_ai.usage.output_tokens")
	genaiCacheReadTokens  = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	genaiMaxTokens        = attribute.Key("gen_ai.request.max_tokens")
	genaiTemperature      = attribute.Key("gen_ai.request.temperature")
	genaiTopP             = attribute.Key("gen_ai.request.top_p")
	genaiChoiceCount      = attribute.Key("gen_ai.request.choice.count")
	genaiStream           = attribute.Key("gen_ai.request.stream")
	genaiTimeToFirstChunk = attribute.Key("gen_ai.response.time_to_first_chunk")
	genaiInputMessages    = attribute.Key("gen_ai.input.messages")
	genaiOutputMessages   = attribute.Key("gen_ai.output.messages")
	// eventContent is the opt-in event that carries a call's messages.
	eventContent = "gen_ai.client.inference.operation.details"
)

// operation is gen_ai.operation.name for the request's API.
func operation(x *filters.Exchange) string {
	if x.Route != nil && x.Route.API == policy.APIEmbeddings {
		return "embeddings"
	}
	return "chat"
}

// dialectProviders are the conventions' names of the OpenAI-compatible
// servers the gateway knows; other dialects are named as the policy names
// them.
var dialectProviders = map[string]string{"mistral": "mistral_ai", "deepseek": "deepseek", "groq": "groq"}

// providerName is gen_ai.provider.name: the conventions' well-known value
// for the provider's kind, else the dialect or kind itself.
func providerName(p *policy.Provider) string {
	switch p.Kind {
	case policy.KindOpenAI:
		return "openai"
	case policy.KindAzureOpenAI:
		return "azure.ai.openai"
	case policy.KindAnthropic:
		return "anthropic"
	case policy.KindGemini:
		return "gcp.gemini"
	}
	if n, ok := dialectProviders[p.Dialect]; ok {
		return n
	}
	if p.Dialect != "" {
		return p.Dialect
	}
	return string(p.Kind)
}
