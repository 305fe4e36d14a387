package providersim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// conversation is the provider-neutral view of a chat request: just what
// the deterministic reply rules need. Each dialect builds one from its own
// request shape.
type conversation struct {
	model string
	// messages and textChars feed the prompt-token rule; the system prompt
	// counts as a message.
	messages  int
	textChars int
	// lastUserText and images describe the last user message.
	lastUserText string
	images       int
	// lastIsUser is true when the conversation ends with a user turn that is
	// not a tool result; only then may the reply be a tool call.
	lastIsUser bool
	// toolResult is set when the conversation ends with a tool result.
	toolResult *string
	tools      []toolDef
	choice     toolChoice
	// maxTokens caps the reply when hasMax is set; a cap of 0 is legal for
	// Anthropic and yields an empty reply.
	maxTokens int
	hasMax    bool
}

type toolDef struct {
	name   string
	schema json.RawMessage
}

type choiceMode int

const (
	choiceAuto choiceMode = iota
	choiceNone
	choiceRequired
	choiceForced
)

type toolChoice struct {
	mode choiceMode
	name string // for choiceForced
}

type finish int

const (
	finishStop finish = iota
	finishLength
	finishToolCall
)

// reply is what the simulated model answers: text or exactly one tool call.
type reply struct {
	text             string
	call             *toolCall
	finish           finish
	promptTokens     int
	completionTokens int
}

type toolCall struct {
	name string
	args []byte // a JSON object
}

const echoChars = 40

// respond applies the deterministic rules documented in README.md.
func respond(c conversation) reply {
	r := reply{promptTokens: promptTokens(c.messages, c.textChars)}
	if c.toolResult != nil {
		r.text = "Tool result received: " + prefix(*c.toolResult, echoChars)
	} else if tl, ok := c.pickTool(); ok {
		r.call = &toolCall{name: tl.name, args: argsFromSchema(tl.schema)}
		r.finish = finishToolCall
		r.completionTokens = ceilDiv(len(tl.name)+len(r.call.args), 4)
		return r
	} else if n, ok := rating(c.lastUserText); ok {
		r.text = "Rating: " + n
	} else {
		r.text = fmt.Sprintf("Hello from %s: %s", c.model, prefix(c.lastUserText, echoChars))
		if c.images > 0 {
			r.text += fmt.Sprintf(" [%d image%s]", c.images, plural(c.images))
		}
	}
	words := strings.Fields(r.text)
	if c.hasMax && len(words) > c.maxTokens {
		words = words[:c.maxTokens]
		r.finish = finishLength
	}
	r.text = strings.Join(words, " ")
	r.completionTokens = len(words)
	return r
}

var ratingRe = regexp.MustCompile(`\[\[rate (10|[1-9])\]\]`)

// rating finds the verdict a test asks a grader for.
func rating(text string) (string, bool) {
	m := ratingRe.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func (c conversation) pickTool() (toolDef, bool) {
	if !c.lastIsUser || len(c.tools) == 0 || c.choice.mode == choiceNone {
		return toolDef{}, false
	}
	if c.choice.mode == choiceForced {
		for _, t := range c.tools {
			if t.name == c.choice.name {
				return t, true
			}
		}
	}
	return c.tools[0], true
}

// promptTokens is the simulator's tokenizer: a quarter token per character,
// rounded up, plus the 3-token per-message overhead of OpenAI chat models.
func promptTokens(messages, chars int) int {
	return ceilDiv(chars, 4) + 3*messages
}

// textTokens counts an embedding input the same way, at least one token.
func textTokens(s string) int {
	return max(1, ceilDiv(utf8.RuneCountInString(s), 4))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// prefix returns the first n characters (runes) of s.
func prefix(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// pieces splits text into per-word stream fragments whose concatenation is
// the text.
func pieces(text string) []string {
	words := strings.Fields(text)
	for i := 1; i < len(words); i++ {
		words[i] = " " + words[i]
	}
	return words
}

// halves splits s at a rune boundary near its middle, so tool arguments
// stream in two fragments the way real providers cut them.
func halves(s string) []string {
	mid := len(s) / 2
	for mid > 0 && !utf8.RuneStart(s[mid]) {
		mid--
	}
	if mid == 0 {
		return []string{s}
	}
	return []string{s[:mid], s[mid:]}
}

// argsFromSchema builds a tool-call argument object holding a placeholder
// for each required property of a JSON schema, in the order listed.
func argsFromSchema(schema json.RawMessage) []byte {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	_ = json.Unmarshal(schema, &s) // a schema that does not parse has no required properties
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range s.Required {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		b.Write(key)
		b.WriteByte(':')
		b.Write(placeholder(s.Properties[name]))
	}
	b.WriteByte('}')
	return b.Bytes()
}

func placeholder(prop json.RawMessage) []byte {
	var p struct {
		Type json.RawMessage   `json:"type"`
		Enum []json.RawMessage `json:"enum"`
	}
	_ = json.Unmarshal(prop, &p) // an unreadable property gets the string placeholder
	if len(p.Enum) > 0 {
		return p.Enum[0]
	}
	var typ string
	if json.Unmarshal(p.Type, &typ) != nil {
		// JSON Schema allows a list of types; the first one decides.
		var types []string
		if json.Unmarshal(p.Type, &types) == nil && len(types) > 0 {
			typ = types[0]
		}
	}
	// Gemini's OpenAPI schemas spell types in upper case.
	switch strings.ToLower(typ) {
	case "number", "integer":
		return []byte("1")
	case "boolean":
		return []byte("true")
	case "array":
		return []byte("[]")
	case "object":
		return []byte("{}")
	case "null":
		return []byte("null")
	default:
		return []byte(`"x"`)
	}
}
