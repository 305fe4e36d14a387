// Package openai translates for providers that speak the OpenAI protocol
// themselves: OpenAI, Azure OpenAI and the OpenAI-compatible family (vLLM,
// Ollama, Mistral, DeepSeek, Groq). Where a compatible server deviates
// from the protocol, a [Dialect] switches the workarounds on.
//
// Bodies are patched, not rebuilt: one pass over the client's bytes
// rewrites the fields the gateway owns (model, output cap,
// stream_options, seed) and copies the rest, so fields the gateway does
// not model still reach the provider and a large body costs a copy. A
// streamed request always asks the provider for usage, which the gateway
// must account; the usage chunk is removed again when the client did not
// ask for it, and split off the finish chunk for servers that put it
// there.
//
// Answers from Azure and compatible servers keep only the fields of
// OpenAI's schema, so no provider-native field (content filter results,
// x_groq, reasoning_content, stop_reason) reaches a client; OpenAI's own
// answers pass whole. README.md lists every rule.
package openai
