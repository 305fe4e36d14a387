// Package responsesapi holds the client-facing wire types of OpenAI's
// Responses API as Switchyard serves it on /v1/responses: the request (and
// its bounded parsing), the whole answer (a response object with its
// output items) and the streamed events. The gateway keeps no state, so it
// serves the stateless subset: a conversation sent whole in input, never
// one continued by previous_response_id, a conversation or a stored
// response. Errors are the chain's refusals (*openai.Error) in OpenAI's
// envelope, which the Responses API shares.
package responsesapi
