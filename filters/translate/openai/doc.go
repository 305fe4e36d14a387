// Package openai translates for providers that speak the OpenAI protocol
// themselves: OpenAI, Azure OpenAI and the OpenAI-compatible family.
//
// The client's body is patched rather than rebuilt, so fields the gateway
// does not model still reach the provider: the model becomes the upstream
// name, and a streamed request always asks for usage (the gateway must
// account for it), which is removed again from the answer when the client
// did not ask for it.
package openai
