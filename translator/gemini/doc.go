// Package gemini translates between OpenAI clients and providers of kind
// gemini: the Gemini API's generateContent and streamGenerateContent (with
// alt=sse) for chat, embedContent and batchEmbedContents for embeddings.
//
// Unlike the OpenAI-protocol translator it rebuilds every request: leading
// system messages become systemInstruction, assistant tool calls functionCall
// parts, tool results functionResponse parts that need the function's name
// recovered from the history. Answers get OpenAI tool-call ids minted from
// the completion id, finish reasons folded into OpenAI's five, and Gemini's
// end-of-body stream end turned into finish chunk, usage chunk and [DONE].
// Gemini 3 thought signatures ride in the minted tool-call ids and go back
// to Gemini on the next turn.
//
// README.md lists every mapping rule, drop and refusal.
package gemini
