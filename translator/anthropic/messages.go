package anthropic

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// placeholderTurn opens a conversation that would otherwise not start with
// a user turn, which Anthropic requires.
const placeholderTurn = "."

// conversation is the Anthropic form of an OpenAI message list.
type conversation struct {
	system []block
	turns  []message
	// toolNames lists the functions the history calls, in first-call order.
	toolNames []string
}

// convertMessages puts the system and developer messages that open the
// conversation into the system prompt and later ones, where they stand, as
// marked text of a user turn (see [translator.SystemNote]: Anthropic's
// system prompt comes before every turn). It turns tool messages into
// tool_result blocks of a user turn, and merges consecutive turns of the
// same role, so that turns alternate and the tool results answering an
// assistant turn open the next user turn.
func convertMessages(msgs []openaiapi.Message) (conversation, *openaiapi.Error) {
	var c conversation
	if e := checkToolPairing(msgs); e != nil {
		return c, e
	}
	leading := translator.LeadingSystem(msgs)
	for i := range msgs {
		m := &msgs[i]
		param := "messages[" + strconv.Itoa(i) + "]"
		switch m.Role {
		case "system", "developer":
			blocks, e := contentBlocks(m.Content, param, false)
			if e != nil {
				return c, e
			}
			if i < leading {
				c.system = append(c.system, blocks...)
			} else {
				c.add("user", systemNote(blocks))
			}
		case "user":
			blocks, e := contentBlocks(m.Content, param, true)
			if e != nil {
				return c, e
			}
			c.add("user", blocks)
		case "assistant":
			blocks, e := c.assistantBlocks(m, param)
			if e != nil {
				return c, e
			}
			c.add("assistant", blocks)
		case "tool":
			b, e := toolResult(m, param)
			if e != nil {
				return c, e
			}
			c.addResult(b)
		}
	}
	c.trimPrefill()
	if len(c.turns) == 0 || c.turns[0].Role != "user" {
		c.turns = append([]message{{Role: "user", Content: []block{{Type: "text", Text: placeholderTurn}}}}, c.turns...)
	}
	return c, nil
}

// add appends blocks as a turn of role, merged into the previous turn when
// it has the same role. A message with nothing to say adds nothing.
func (c *conversation) add(role string, blocks []block) {
	if len(blocks) == 0 {
		return
	}
	if n := len(c.turns); n > 0 && c.turns[n-1].Role == role {
		c.turns[n-1].Content = append(c.turns[n-1].Content, blocks...)
		return
	}
	c.turns = append(c.turns, message{Role: role, Content: blocks})
}

// addResult adds a tool_result to the user turn after the assistant's
// calls. Anthropic wants a turn's tool_results before anything else in it,
// so one that follows a system note placed there already goes before it.
func (c *conversation) addResult(b block) {
	n := len(c.turns)
	if n == 0 || c.turns[n-1].Role != "user" {
		c.add("user", []block{b})
		return
	}
	t := &c.turns[n-1]
	at := 0
	for at < len(t.Content) && t.Content[at].Type == "tool_result" {
		at++
	}
	t.Content = slices.Insert(t.Content, at, b)
}

// systemNote joins the text blocks of a system message that comes after
// the conversation began into one marked text block.
func systemNote(blocks []block) []block {
	if len(blocks) == 0 {
		return nil
	}
	texts := make([]string, len(blocks))
	for i, b := range blocks {
		texts[i] = b.Text
	}
	return []block{{Type: "text", Text: translator.SystemNote(strings.Join(texts, "\n"))}}
}

// trimPrefill strips trailing whitespace from a final assistant turn (a
// prefill), which Anthropic refuses.
func (c *conversation) trimPrefill() {
	n := len(c.turns)
	if n == 0 || c.turns[n-1].Role != "assistant" {
		return
	}
	t := &c.turns[n-1]
	last := &t.Content[len(t.Content)-1]
	if last.Type != "text" {
		return
	}
	if last.Text = strings.TrimRightFunc(last.Text, unicode.IsSpace); last.Text == "" {
		t.Content = t.Content[:len(t.Content)-1]
	}
	if len(t.Content) == 0 {
		c.turns = c.turns[:n-1]
	}
}

// checkToolPairing holds the client to OpenAI's own rule, with OpenAI's
// wording: every tool call is answered by a tool message before the next
// user or assistant message, and every tool message answers one. Anthropic
// enforces the same pairing, in its own words.
func checkToolPairing(msgs []openaiapi.Message) *openaiapi.Error {
	open := map[string]bool{}
	opener := 0
	unanswered := func() *openaiapi.Error {
		var ids []string
		for _, tc := range msgs[opener].ToolCalls {
			if open[tc.ID] {
				ids = append(ids, tc.ID)
			}
		}
		return badRequest("invalid_value", "messages["+strconv.Itoa(opener)+"]",
			"an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; these tool_call_ids have no response: %s", strings.Join(ids, ", "))
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case "assistant", "user":
			if len(open) > 0 {
				return unanswered()
			}
			if m.Role == "assistant" {
				for _, tc := range m.ToolCalls {
					open[tc.ID] = true
				}
				opener = i
			}
		case "tool":
			if !open[m.ToolCallID] {
				return badRequest("invalid_value", "messages["+strconv.Itoa(i)+"]",
					"a message with role 'tool' must respond to a tool call of the preceding assistant message (tool_call_id %q)", m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	if len(open) > 0 {
		return unanswered()
	}
	return nil
}

// assistantBlocks turns an assistant message into text blocks followed by
// tool_use blocks.
func (c *conversation) assistantBlocks(m *openaiapi.Message, param string) ([]block, *openaiapi.Error) {
	blocks, e := contentBlocks(m.Content, param, false)
	if e != nil {
		return nil, e
	}
	if len(blocks) == 0 && m.Refusal != nil && strings.TrimSpace(*m.Refusal) != "" {
		blocks = append(blocks, block{Type: "text", Text: *m.Refusal})
	}
	for j, tc := range m.ToolCalls {
		input, ok := argumentsObject(tc.Function.Arguments)
		if !ok {
			return nil, badRequest("invalid_value", param+".tool_calls["+strconv.Itoa(j)+"].function.arguments", "function arguments must be a JSON object")
		}
		blocks = append(blocks, block{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
		if !containsString(c.toolNames, tc.Function.Name) {
			c.toolNames = append(c.toolNames, tc.Function.Name)
		}
	}
	return blocks, nil
}

// argumentsObject parses a tool call's arguments string into the object
// Anthropic's tool_use input must be; empty arguments mean none.
func argumentsObject(args string) (json.RawMessage, bool) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}"), true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return nil, false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(args)) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// toolResult turns a tool message into a tool_result block. Empty content
// is left out rather than sent as an empty text.
func toolResult(m *openaiapi.Message, param string) (block, *openaiapi.Error) {
	b := block{Type: "tool_result", ToolUseID: m.ToolCallID}
	if !m.Content.IsParts {
		if strings.TrimSpace(m.Content.Text) != "" {
			b.Content, _ = json.Marshal(m.Content.Text)
		}
		return b, nil
	}
	blocks, e := contentBlocks(m.Content, param, true)
	if e != nil || len(blocks) == 0 {
		return b, e
	}
	b.Content, _ = json.Marshal(blocks)
	return b, nil
}

// contentBlocks maps message content to blocks. Blank text is dropped
// (Anthropic refuses empty and whitespace-only text blocks); media (images
// and files) is allowed only where Anthropic takes it.
func contentBlocks(c openaiapi.Content, param string, media bool) ([]block, *openaiapi.Error) {
	if !c.IsParts {
		if strings.TrimSpace(c.Text) == "" {
			return nil, nil
		}
		return []block{{Type: "text", Text: c.Text}}, nil
	}
	var blocks []block
	for j, p := range c.Parts {
		pp := param + ".content[" + strconv.Itoa(j) + "]"
		switch {
		case p.Type == "text" || p.Type == "refusal":
			text := p.Text
			if p.Type == "refusal" {
				text = p.Refusal
			}
			if strings.TrimSpace(text) != "" {
				blocks = append(blocks, block{Type: "text", Text: text})
			}
		case p.Type == "input_audio":
			return nil, badRequest("unsupported_value", pp, "audio input is not supported for this model")
		case !media:
			return nil, badRequest("invalid_value", pp, "content parts of type %q are not allowed in this message", p.Type)
		case p.Type == "image_url" && p.ImageURL != nil:
			b, e := imageBlock(p.ImageURL.URL, pp+".image_url.url")
			if e != nil {
				return nil, e
			}
			blocks = append(blocks, b)
		case p.Type == "file" && p.File != nil:
			b, e := fileBlock(p.File, pp+".file")
			if e != nil {
				return nil, e
			}
			blocks = append(blocks, b)
		default:
			return nil, badRequest("invalid_value", pp, "content part of type %q is not supported", p.Type)
		}
	}
	return blocks, nil
}

// imageTypes are the media types Anthropic accepts for base64 images.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// imageBlock maps an image URL: a base64 data URL becomes a base64 source,
// an http(s) URL a url source that the provider fetches.
func imageBlock(url, param string) (block, *openaiapi.Error) {
	lower := strings.ToLower(url)
	switch {
	case strings.HasPrefix(lower, "data:"):
		mt, data, ok := parseDataURL(url)
		if !ok {
			return block{}, badRequest("invalid_value", param, "an image data URL must look like data:<media type>;base64,<data>")
		}
		if mt == "image/jpg" {
			mt = "image/jpeg"
		}
		if !imageTypes[mt] {
			return block{}, badRequest("unsupported_value", param, "image media type %q is not supported; use image/jpeg, image/png, image/gif or image/webp", mt)
		}
		return block{Type: "image", Source: &source{Type: "base64", MediaType: mt, Data: data}}, nil
	case strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://"):
		return block{Type: "image", Source: &source{Type: "url", URL: url}}, nil
	}
	return block{}, badRequest("invalid_value", param, "image_url.url must be an http(s) URL or a base64 data URL")
}

// fileBlock maps a file part: a base64 PDF becomes a document block.
// Uploaded file ids belong to another provider's storage.
func fileBlock(f *openaiapi.FilePart, param string) (block, *openaiapi.Error) {
	if f.FileData == "" {
		return block{}, badRequest("unsupported_value", param+".file_id", "file ids are not supported for this model; send file_data")
	}
	mt, data, ok := parseDataURL(f.FileData)
	if !ok {
		return block{}, badRequest("invalid_value", param+".file_data", "file_data must look like data:<media type>;base64,<data>")
	}
	if mt != "application/pdf" {
		return block{}, badRequest("unsupported_value", param+".file_data", "file media type %q is not supported; use application/pdf", mt)
	}
	return block{Type: "document", Source: &source{Type: "base64", MediaType: mt, Data: data}}, nil
}

// parseDataURL splits data:<media type>[;param...];base64,<data>. Only
// base64 data URLs are accepted; the media type is lower-cased.
func parseDataURL(u string) (mediaType, data string, ok bool) {
	if len(u) < 5 || !strings.EqualFold(u[:5], "data:") {
		return "", "", false
	}
	meta, data, found := strings.Cut(u[5:], ",")
	if !found || data == "" {
		return "", "", false
	}
	params := strings.Split(meta, ";")
	base64 := false
	for _, p := range params[1:] {
		base64 = base64 || strings.EqualFold(strings.TrimSpace(p), "base64")
	}
	mediaType = strings.ToLower(strings.TrimSpace(params[0]))
	return mediaType, data, base64 && mediaType != ""
}
