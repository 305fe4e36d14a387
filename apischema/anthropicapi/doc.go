// Package anthropicapi holds the client-facing wire types of Anthropic's
// Messages API as Switchyard serves it on /v1/messages: the request (and
// its bounded parsing), the whole and streamed answer, the token count and
// the error envelope. Parsing is lenient about unknown fields and strict
// about the types of the fields the gateway relies on; errors are the
// chain's refusals (*openai.Error), which the route renders in Anthropic's
// envelope with [ErrorBody] and [ErrorEvent].
package anthropicapi
