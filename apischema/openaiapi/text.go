package openaiapi

import "github.com/switchyard/switchyard/apischema/jsonform"

// ChatText are the members of a chat completion request that hold its
// text: each message's content (a string, or its parts' text) and the
// arguments of the tool calls it made. A redaction rewrites these and
// nothing else.
var ChatText = jsonform.Patterns(
	"messages.*.content",
	"messages.*.content.*.text",
	"messages.*.tool_calls.*.function.arguments",
)

// EmbeddingsText are the members of an embeddings request that hold its
// text: the input, a string or a list of them (token arrays are numbers).
var EmbeddingsText = jsonform.Patterns("input", "input.*")
