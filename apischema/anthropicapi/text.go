package anthropicapi

import "github.com/switchyard/switchyard/apischema/jsonform"

// MessagesText are the members of a Messages request that hold its text:
// the system prompt, each turn's text blocks, its tool results (a string,
// or their text blocks) and the input of its tool calls. Thinking blocks
// are not among them: Anthropic signs them, and one changed is refused.
// A redaction rewrites these and nothing else.
var MessagesText = jsonform.Patterns(
	"system",
	"system.*.text",
	"messages.*.content",
	"messages.*.content.*.text",
	"messages.*.content.*.content",
	"messages.*.content.*.content.*.text",
	"messages.*.content.*.input.**",
)
