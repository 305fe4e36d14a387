package providersim

import (
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
	// format is the shape the client asked the reply text to take.
	format replyFormat

	// scripted selects the scripted rules (ProviderConfig.Script); the
	// exchange sets it (see exchange.answer).
	scripted bool
	// prompt is the text of the last user turn that asks something rather
	// than answering tool calls (system turns never count), and callsSince
	// the tool calls the assistant made after it: scripted mode calls the
	// tools the prompt names, in order, until callsSince reaches their
	// number. A dialect fills them with promptTurn and assistantCalls as it
	// walks the conversation.
	prompt     string
	callsSince int
}

// replyFormat is JSON mode or structured output: OpenAI response_format,
// Anthropic output_config.format, Gemini responseMimeType application/json.
type replyFormat struct {
	json bool
	// schema, when set, is the JSON schema the reply must satisfy.
	schema json.RawMessage
}

// promptTurn records a user turn that asks something: the tool calls
// counted so far answered an older prompt.
func (c *conversation) promptTurn(text string) {
	c.prompt, c.callsSince = text, 0
}

// assistantCalls records an assistant turn's tool calls.
func (c *conversation) assistantCalls(n int) { c.callsSince += n }

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
	if tl, args, ok := c.pickTool(); ok {
		if args == nil {
			args = argsFromSchema(tl.schema)
		}
		r.call = &toolCall{name: tl.name, args: args}
		r.finish = finishToolCall
		r.completionTokens = ceilDiv(len(tl.name)+len(r.call.args), 4)
		return r
	}
	userText := c.lastUserText
	if c.scripted {
		userText = withoutReminders(userText)
	}
	if c.toolResult != nil {
		r.text = "Tool result received: " + prefix(*c.toolResult, echoChars)
	} else if n, ok := rating(userText); ok {
		r.text = "Rating: " + n
	} else if n, ok := best(userText); ok {
		r.text = "Best: " + n
	} else {
		r.text = fmt.Sprintf("Hello from %s: %s", c.model, prefix(userText, echoChars))
		if c.images > 0 {
			r.text += fmt.Sprintf(" [%d image%s]", c.images, plural(c.images))
		}
	}
	r.text = strings.Join(strings.Fields(r.text), " ")
	if c.format.json {
		r.text = jsonReply(c.format.schema, r.text)
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

var bestRe = regexp.MustCompile(`\[\[pick ([1-9])\]\]`)

// best finds the choice a test asks a judge of several answers for.
func best(text string) (string, bool) {
	m := bestRe.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// pickTool is the tool call to make, if any, with its arguments (nil:
// from the tool's schema). Unscripted, every user turn that offers tools
// gets a call: to the forced tool, else the first.
func (c conversation) pickTool() (toolDef, []byte, bool) {
	if len(c.tools) == 0 || c.choice.mode == choiceNone {
		return toolDef{}, nil, false
	}
	if c.scripted {
		return c.scriptedCall()
	}
	if !c.lastIsUser {
		return toolDef{}, nil, false
	}
	if c.choice.mode == choiceForced {
		for _, t := range c.tools {
			if t.name == c.choice.name {
				return t, nil, true
			}
		}
	}
	return c.tools[0], nil, true
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
