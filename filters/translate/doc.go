// Package translate is the filter that speaks each provider's protocol.
//
// On every upstream attempt it builds a translator for that attempt's
// provider (registry.go picks it by provider kind), translates the client's
// original OpenAI request afresh — so a fallback to another kind of
// provider is translated for that provider, not re-translated — and sets
// the provider's key. On the way back it translates the answer of the last
// attempt, whole or streamed, and its errors, into OpenAI form, and
// accounts for the usage it reports.
package translate
