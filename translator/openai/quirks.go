package openai

import (
	"github.com/switchyard/switchyard/configs/policy"
)

// Dialect names the server behind an openai_compatible provider, whose
// deviations from OpenAI's protocol the translator works around. The zero
// value is a server that follows the protocol.
type Dialect string

// The dialects the translator knows; README.md lists what each switches.
const (
	DialectGeneric  Dialect = ""
	DialectVLLM     Dialect = "vllm"
	DialectOllama   Dialect = "ollama"
	DialectMistral  Dialect = "mistral"
	DialectDeepSeek Dialect = "deepseek"
	DialectGroq     Dialect = "groq"
)

// Dialects lists the dialect names a policy may give an openai_compatible
// provider.
func Dialects() []Dialect {
	return []Dialect{DialectVLLM, DialectOllama, DialectMistral, DialectDeepSeek, DialectGroq}
}

// Known reports whether d is a dialect the translator knows.
func (d Dialect) Known() bool {
	_, ok := dialects[d]
	return ok
}

// paramRule says what happens to a top-level request field a server lacks.
type paramRule uint8

const (
	// dropParam removes a hint whose absence changes nothing the client can
	// observe in the answer's shape (user, store, service_tier...).
	dropParam paramRule = iota + 1
	// refuseParam removes the field when it asks for nothing (null, false,
	// "", {}, [], and 1 for n) and refuses the request with a 400 naming
	// it otherwise: the server would ignore it and the client would get
	// something other than what it asked for.
	refuseParam
)

// quirks are the switches one provider's translation runs with.
type quirks struct {
	// capField is the field that carries the output token cap.
	capField string
	// seedField is the field that carries the sampling seed.
	seedField string
	// streamOptions says whether a streamed request may carry
	// stream_options; without it the server must report usage on its own.
	streamOptions bool
	// strictResponse keeps only the fields of OpenAI's schema in answers,
	// so no provider-native field reaches a client. OpenAI's own answers
	// pass whole: its fields are the protocol.
	strictResponse bool
	// shortToolIDs rewrites tool-call ids to nine alphanumerics.
	shortToolIDs bool
	// dropMessageName removes messages[].name.
	dropMessageName bool
	// developerAsSystem sends developer messages as system messages, the
	// role OpenAI itself treats them as and the one every chat template
	// knows.
	developerAsSystem bool
	// noToolChoice: tool_choice "auto" is dropped, "none" drops the tools,
	// anything else is refused.
	noToolChoice bool
	// dataImagesOnly refuses image parts given by http(s) URL.
	dataImagesOnly bool
	// noTokenEmbeddings refuses token-array embedding inputs.
	noTokenEmbeddings bool
	// floatEmbeddingsOnly asks for float embeddings whatever the client
	// asked; the translator encodes base64 itself.
	floatEmbeddingsOnly bool
	// dimensionsField carries embeddings' dimensions.
	dimensionsField string
	// params lists top-level fields the server lacks.
	params map[string]paramRule
}

var compatible = quirks{
	capField:          "max_tokens",
	seedField:         "seed",
	streamOptions:     true,
	strictResponse:    true,
	developerAsSystem: true,
	dimensionsField:   "dimensions",
}

var dialects = map[Dialect]quirks{
	DialectGeneric: compatible,
	// vLLM follows the protocol as far as the translator is concerned:
	// stream_options only on streams and integer error codes are handled
	// for every provider.
	DialectVLLM: compatible,
	DialectOllama: with(compatible, func(q *quirks) {
		q.noToolChoice = true
		q.dataImagesOnly = true
		q.noTokenEmbeddings = true
		q.params = map[string]paramRule{
			"user": dropParam,
			"n":    refuseParam, "logit_bias": refuseParam, "logprobs": refuseParam, "top_logprobs": refuseParam,
		}
	}),
	// Mistral rejects any field it does not know (422 extra_forbidden), so
	// every OpenAI field it lacks has a rule; fields OpenAI does not define
	// either still pass, for Mistral's own (safe_prompt, prompt_mode).
	DialectMistral: with(compatible, func(q *quirks) {
		q.seedField = "random_seed"
		q.streamOptions = false
		q.shortToolIDs = true
		q.dropMessageName = true
		q.floatEmbeddingsOnly = true
		q.dimensionsField = "output_dimension"
		q.params = map[string]paramRule{
			"user": dropParam, "store": dropParam, "service_tier": dropParam, "prompt_cache_key": dropParam,
			"safety_identifier": dropParam, "reasoning_effort": dropParam, "verbosity": dropParam,
			"logit_bias": refuseParam, "logprobs": refuseParam, "top_logprobs": refuseParam,
			"modalities": refuseParam,
			"functions":  refuseParam, "function_call": refuseParam,
		}
	}),
	DialectDeepSeek: with(compatible, func(q *quirks) {
		q.params = map[string]paramRule{"n": refuseParam, "logit_bias": refuseParam}
	}),
	DialectGroq: with(compatible, func(q *quirks) {
		q.dropMessageName = true
		q.params = map[string]paramRule{
			"n": refuseParam, "logit_bias": refuseParam, "logprobs": refuseParam, "top_logprobs": refuseParam,
		}
	}),
}

func with(q quirks, f func(*quirks)) quirks {
	f(&q)
	return q
}

// quirksFor returns the switches for a provider. The dialect only applies
// to openai_compatible providers; an unknown one means the generic server.
func quirksFor(p *policy.Provider, d Dialect) quirks {
	switch p.Kind {
	case policy.KindOpenAI:
		return quirks{capField: "max_completion_tokens", seedField: "seed", streamOptions: true, dimensionsField: "dimensions"}
	case policy.KindAzureOpenAI:
		q := quirks{capField: "max_completion_tokens", seedField: "seed", streamOptions: true, strictResponse: true, dimensionsField: "dimensions"}
		if azureBefore20240901(p.APIVersion) {
			q.capField = "max_tokens"
			q.streamOptions = false
		}
		return q
	}
	if q, ok := dialects[d]; ok {
		return q
	}
	return compatible
}

// azureBefore20240901 reports whether a dated Azure api-version predates
// 2024-09-01-preview, which brought max_completion_tokens and
// stream_options; older versions reject both as unknown arguments.
// Undated versions ("preview", "v1") are the current API.
func azureBefore20240901(v string) bool {
	return len(v) >= 10 && v[0] >= '0' && v[0] <= '9' && v[:10] < "2024-09-01"
}
