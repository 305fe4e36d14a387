package messages

import (
	"encoding/json"
	"strings"

	"github.com/switchyard/switchyard/apischema/anthropicapi"
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
)

// Translator serves a Messages client through a chat translator: the
// request goes out as chat does, and what the chat translator writes back
// is rewritten as Messages. Not safe for concurrent use.
type Translator struct {
	chat translator.Translator
	t    translator.Target
	// id is the message id, msg_ and the request's id.
	id string

	// Stream state.
	r       sse.Reader
	started bool // message_start went out
	pinged  bool
	open    int // index of the open content block, -1 when none
	text    int // index of the open text block, -1 when none
	blocks  int // content blocks started so far
	// tools maps a chat tool-call index to its content block.
	tools  map[int]int
	reason string
	done   bool // message_stop went out
	failed bool // an error event went out
}

// New returns a translator for one attempt whose provider the chat
// translator serves.
func New(chat translator.Translator, t translator.Target) *Translator {
	return &Translator{chat: chat, t: t, id: "msg_" + strings.TrimPrefix(t.ID, "chatcmpl-"), open: -1, text: -1}
}

// Request implements [translator.Translator.Request]: raw is the client's
// Messages body, req its canonical chat request, which the chat translator
// gets with a body of its own.
func (tr *Translator) Request(req *openaiapi.ChatRequest, raw []byte) (translator.Upstream, *openaiapi.Error) {
	mr, e := anthropicapi.ParseMessagesRequest(raw, false)
	if e != nil {
		return translator.Upstream{}, e
	}
	if e := Portable(mr, tr.t.Provider.Name); e != nil {
		return translator.Upstream{}, e
	}
	body, err := json.Marshal(req)
	if err != nil {
		return translator.Upstream{}, openaiapi.Errorf(500, openaiapi.TypeServer, "internal_error", "the request could not be encoded: %v", err)
	}
	return tr.chat.Request(req, body)
}

// IsStream implements [translator.Translator.IsStream].
func (tr *Translator) IsStream(status int, h translator.Headers) bool {
	return tr.chat.IsStream(status, h)
}

// Usage implements [translator.Translator.Usage].
func (tr *Translator) Usage() (openaiapi.Usage, bool) { return tr.chat.Usage() }

// usage is a chat usage in Anthropic's terms: input_tokens leaves out the
// cache reads and writes, which it counts apart.
func usage(u openaiapi.Usage) anthropicapi.Usage {
	var read, write int
	if d := u.PromptTokensDetails; d != nil {
		read, write = d.CachedTokens, d.CacheWriteTokens
	}
	return anthropicapi.Usage{
		InputTokens:              max(u.PromptTokens-read-write, 0),
		OutputTokens:             u.CompletionTokens,
		CacheReadInputTokens:     read,
		CacheCreationInputTokens: write,
	}
}

// stopReason is the Messages stop reason of a chat finish reason.
func stopReason(finish string) string {
	switch finish {
	case openaiapi.FinishLength:
		return anthropicapi.StopMaxTokens
	case openaiapi.FinishToolCalls, openaiapi.FinishFunctionCall:
		return anthropicapi.StopToolUse
	case openaiapi.FinishContentFilter:
		return anthropicapi.StopRefusal
	}
	return anthropicapi.StopEndTurn
}

var _ translator.Translator = (*Translator)(nil)
