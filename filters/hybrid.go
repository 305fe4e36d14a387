package filters

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// The judge of a hybrid request reads the conversation and every
// acceptable answer, each clipped, and writes a few tokens: the quota
// filter reserves for it with these bounds, and the server's call keeps
// to them.
const (
	// JudgeMaxTokens caps the judge's reply ("Best: 2").
	JudgeMaxTokens = 16
	// JudgeClipBytes bounds what the judge reads of the conversation and
	// of each answer.
	JudgeClipBytes = 8 << 10
	// JudgeOverheadTokens bounds the judge's instructions and framing.
	JudgeOverheadTokens = 200
)

// JudgeRequest is the chat request asking model which of answers (the
// client-format bodies of whole chat completions) best answers the
// conversation; the reply names it by its 1-based number.
func JudgeRequest(model string, conversation []openaiapi.Message, answers [][]byte) *openaiapi.ChatRequest {
	var b strings.Builder
	b.WriteString("Several assistants answered the same conversation. Decide which answer is best: correct, complete, and what the user asked for. ")
	fmt.Fprintf(&b, "Reply with one line, \"Best: N\", N from 1 to %d, and nothing else.\n\n", len(answers))
	b.WriteString("<conversation>\n")
	var conv strings.Builder
	for _, m := range conversation {
		conv.WriteString(m.Role + ": " + m.Content.PlainText() + "\n")
	}
	b.WriteString(clipTail(conv.String(), JudgeClipBytes))
	b.WriteString("</conversation>\n")
	for i, a := range answers {
		fmt.Fprintf(&b, "<answer %d>\n%s\n</answer %d>\n", i+1, clipHead(AnswerText(a), JudgeClipBytes), i+1)
	}
	limit := JudgeMaxTokens
	return &openaiapi.ChatRequest{
		Model:     model,
		MaxTokens: &limit,
		Messages:  []openaiapi.Message{{Role: "user", Content: openaiapi.Content{Text: b.String(), Set: true}}},
	}
}

var bestRe = regexp.MustCompile(`(?i)\bbest:\s*(\d+)`)

// ParseBest reads the judge's verdict: the number of the best of n
// answers, 1-based.
func ParseBest(reply string, n int) (int, bool) {
	m := bestRe.FindStringSubmatch(reply)
	if m == nil {
		return 0, false
	}
	k, err := strconv.Atoi(m[1])
	if err != nil || k < 1 || k > n {
		return 0, false
	}
	return k, true
}

// AnswerText is what a whole chat completion says: its first choice's
// content, refusal or tool calls, as text.
func AnswerText(body []byte) string {
	var c openaiapi.ChatCompletion
	if json.Unmarshal(body, &c) != nil || len(c.Choices) == 0 {
		return ""
	}
	m := c.Choices[0].Message
	switch {
	case m.Content != nil && *m.Content != "":
		return *m.Content
	case m.Refusal != nil:
		return *m.Refusal
	case len(m.ToolCalls) > 0:
		b, _ := json.Marshal(m.ToolCalls)
		return string(b)
	}
	return ""
}

// Acceptable reports whether a whole chat completion answered the
// request: it finished of itself (stop, or a tool call) rather than at its
// length limit or a content filter, and said something.
func Acceptable(body []byte) bool {
	var c openaiapi.ChatCompletion
	if json.Unmarshal(body, &c) != nil || len(c.Choices) == 0 {
		return false
	}
	ch := c.Choices[0]
	switch ch.FinishReason {
	case "stop", "tool_calls":
	default:
		return false
	}
	return len(ch.Message.ToolCalls) > 0 || (ch.Message.Content != nil && strings.TrimSpace(*ch.Message.Content) != "")
}

// clipHead keeps the first n bytes of s, on a rune boundary.
func clipHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !runeStart(s[n]) {
		n--
	}
	return s[:n]
}

// clipTail keeps the last n bytes of s, on a rune boundary: the end of a
// conversation is what its answer answers.
func clipTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !runeStart(s[i]) {
		i++
	}
	return s[i:]
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }
