package responsesapi

import "github.com/switchyard/switchyard/apischema/jsonform"

// RequestText are the members of a Responses request that hold its text:
// the instructions, the input (a string, or its items' content and text
// parts), and the arguments and outputs of function calls. Reasoning
// items are not among them: their encrypted content is OpenAI's. A
// redaction rewrites these and nothing else.
var RequestText = jsonform.Patterns(
	"instructions",
	"input",
	"input.*.content",
	"input.*.content.*.text",
	"input.*.arguments",
	"input.*.output",
	"input.*.output.*.text",
)
