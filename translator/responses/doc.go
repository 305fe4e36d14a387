// Package responses translates for clients of OpenAI's Responses API
// (/v1/responses, stateless subset) served by a provider other than
// OpenAI, which gets their requests as they are (translator/openai's
// ResponsesPassthrough): the (Responses, OpenAI chat) schema pair. As for Messages clients
// (translator/messages), the client's request becomes the gateway's
// canonical chat request ([ToChat]), which every filter reads and which
// the provider's chat translator (OpenAI-style, Anthropic or Gemini)
// turns into the provider's wire format; the chat answer that translator
// writes, whole or streamed, becomes a response object or the Responses
// event stream here.
package responses
