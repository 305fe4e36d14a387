// Package anthropic translates between the OpenAI Chat Completions protocol
// the gateway's clients speak and Anthropic's Messages API.
//
// The request is rebuilt rather than patched: the two protocols differ in
// structure (a top-level system prompt, strictly alternating turns, tool
// results inside user turns, a required max_tokens), so every field the
// gateway forwards is mapped by a rule, and a field Anthropic cannot honour
// is dropped by a documented rule or refused with a 400. README.md lists
// the rules. Responses, whole or streamed, come back in OpenAI form with
// the client's model name and the gateway's completion id.
package anthropic
