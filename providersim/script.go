package providersim

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Scripted mode (ProviderConfig.Script) lets a real agent drive the
// simulated model through a session that ends by itself: the model calls
// a tool only when the user's prompt asks for it, calls each asked-for tool
// once, and otherwise answers in text. Without it, every user turn that
// offers tools is answered with a tool call, which sends an agent whose
// first tool spawns sub-agents into an endless loop.

// directive is one tool call a prompt asks for; nil args are built from the
// tool's schema.
type directive struct {
	name string
	args []byte
}

// callOpen starts a directive: [[call NAME]] or [[call NAME {json}]].
const callOpen = "[[call "

// useToolRe is the plain-language directive, "use the NAME tool".
var useToolRe = regexp.MustCompile("(?i)\\buse the `?([A-Za-z0-9_.:-]+)`? tool\\b")

// directives lists the tool calls text asks for, in the order written.
func directives(text string) []directive {
	type found struct {
		at int
		d  directive
	}
	var all []found
	for i := 0; ; {
		j := strings.Index(text[i:], callOpen)
		if j < 0 {
			break
		}
		at := i + j + len(callOpen)
		d, n, ok := parseCall(text[at:])
		if ok {
			all = append(all, found{at, d})
		}
		i = at + n
	}
	for _, m := range useToolRe.FindAllStringSubmatchIndex(text, -1) {
		all = append(all, found{m[0], directive{name: text[m[2]:m[3]]}})
	}
	slices.SortStableFunc(all, func(a, b found) int { return a.at - b.at })
	out := make([]directive, len(all))
	for i, f := range all {
		out[i] = f.d
	}
	return out
}

// parseCall reads what follows "[[call ": a tool name, optionally a JSON
// object, and the closing "]]". It returns how many bytes it consumed; a
// directive that does not close, or whose arguments are not one JSON
// object, is not a directive.
func parseCall(s string) (d directive, n int, ok bool) {
	end := strings.IndexAny(s, " \t\r\n]")
	if end <= 0 {
		return directive{}, 0, false
	}
	d.name = s[:end]
	rest := strings.TrimLeft(s[end:], " \t\r\n")
	if strings.HasPrefix(rest, "{") {
		dec := json.NewDecoder(strings.NewReader(rest))
		var raw json.RawMessage
		if dec.Decode(&raw) != nil || !isObject(raw) {
			return directive{}, 0, false
		}
		d.args = compactJSON(raw)
		rest = strings.TrimLeft(rest[dec.InputOffset():], " \t\r\n")
	}
	if !strings.HasPrefix(rest, "]]") {
		return directive{}, 0, false
	}
	return d, len(s) - len(rest) + len("]]"), true
}

const reminderOpen, reminderClose = "<system-reminder>", "</system-reminder>"

// withoutReminders drops the <system-reminder> blocks Claude Code puts in
// its user turns: they are the client talking (and they name tools), not
// the user asking.
func withoutReminders(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, reminderOpen)
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i:], reminderClose)
		if j < 0 {
			break
		}
		s = s[i+j+len(reminderClose):]
	}
	return strings.TrimSpace(b.String())
}

// tool finds an offered tool by name, exactly or else ignoring case.
func (c conversation) tool(name string) (toolDef, bool) {
	for _, t := range c.tools {
		if t.name == name {
			return t, true
		}
	}
	for _, t := range c.tools {
		if strings.EqualFold(t.name, name) {
			return t, true
		}
	}
	return toolDef{}, false
}

// scriptedCall is the tool call scripted mode makes, if any. A forced tool
// choice forces its tool (with a directive's arguments when the prompt
// gives some for it). Otherwise the prompt's directives that name offered
// tools are called one per reply, in order: the reply after the last one's
// result is text. A tool choice that requires some call (OpenAI
// "required", Anthropic "any", Gemini ANY) calls the first tool when the
// prompt asks for none, as the real API must.
func (c conversation) scriptedCall() (toolDef, []byte, bool) {
	if !c.lastIsUser && c.toolResult == nil {
		return toolDef{}, nil, false // a prefill is continued in text
	}
	type asked struct {
		tool toolDef
		args []byte
	}
	var calls []asked
	for _, d := range directives(withoutReminders(c.prompt)) {
		if t, ok := c.tool(d.name); ok {
			calls = append(calls, asked{t, d.args})
		}
	}
	if c.lastIsUser && c.choice.mode == choiceForced {
		t, ok := c.tool(c.choice.name)
		if !ok {
			t = c.tools[0]
		}
		for _, a := range calls {
			if a.tool.name == t.name {
				return t, a.args, true
			}
		}
		return t, nil, true
	}
	if c.callsSince < len(calls) {
		a := calls[c.callsSince]
		return a.tool, a.args, true
	}
	if c.lastIsUser && c.choice.mode == choiceRequired {
		return c.tools[0], nil, true
	}
	return toolDef{}, nil, false
}
