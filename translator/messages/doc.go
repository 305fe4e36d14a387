// Package messages translates for clients of Anthropic's Messages API
// (/v1/messages) served by a provider that speaks another protocol: the
// (Messages, OpenAI chat) schema pair. The client's request becomes the
// gateway's canonical chat request ([ToChat]), which every filter reads
// and which the provider's chat translator turns into the provider's
// wire format; the chat answer that translator writes, whole or streamed,
// becomes a Messages answer here, with Anthropic's exact event sequence.
//
// An Anthropic provider needs none of this: the (Messages, Anthropic)
// pair is a pass-through, translator/anthropic.Passthrough.
package messages
