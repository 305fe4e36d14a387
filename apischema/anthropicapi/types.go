package anthropicapi

import (
	"encoding/json"
	"errors"

	"github.com/switchyard/switchyard/apischema/jsonform"
)

// Version is the anthropic-version the gateway speaks and sends upstream
// when a client named none.
const Version = "2023-06-01"

// MessagesRequest is a POST /v1/messages body (and, without max_tokens,
// a /v1/messages/count_tokens body).
type MessagesRequest struct {
	Model         string      `json:"model"`
	MaxTokens     *int        `json:"max_tokens,omitempty"`
	System        Text        `json:"system,omitzero"`
	Messages      []Message   `json:"messages"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Temperature   *float64    `json:"temperature,omitempty"`
	TopP          *float64    `json:"top_p,omitempty"`
	TopK          *int        `json:"top_k,omitempty"`
	Stream        bool        `json:"stream,omitempty"`
	Tools         []Tool      `json:"tools,omitempty"`
	ToolChoice    *ToolChoice `json:"tool_choice,omitempty"`
	Metadata      *Metadata   `json:"metadata,omitempty"`
	// CacheControl asks for automatic caching: the cache breakpoint moves
	// with the conversation.
	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// Message is one turn of the conversation.
type Message struct {
	Role    string `json:"role"`
	Content Blocks `json:"content"`
}

// Blocks is a message's content: a string, which stands for one text
// block, or an array of blocks.
type Blocks []Block

// UnmarshalJSON implements [json.Unmarshaler].
func (bs *Blocks) UnmarshalJSON(b []byte) error {
	many, err := jsonform.OneOrMany(b, func(s string) Block { return Block{Type: "text", Text: s} })
	if errors.Is(err, jsonform.ErrShape) {
		return errors.New("content must be a string or an array of content blocks")
	}
	*bs = many
	return err
}

// Text is a system prompt: a string or an array of text blocks, read as
// the text blocks either way.
type Text []Block

// UnmarshalJSON implements [json.Unmarshaler].
func (t *Text) UnmarshalJSON(b []byte) error {
	var bs Blocks
	if err := bs.UnmarshalJSON(b); err != nil {
		return errors.New("system must be a string or an array of text blocks")
	}
	*t = Text(bs)
	return nil
}

// Block is a content block of any type, in requests and answers; each
// type uses its own subset of the fields.
type Block struct {
	Type string `json:"type"`
	// Text is a text block's text.
	Text string `json:"text,omitempty"`
	// Source is an image or document block's bytes.
	Source *Source `json:"source,omitempty"`
	// ID, Name and Input are a tool_use block's.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError are a tool_result block's; Content is
	// a string or an array of blocks.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   Blocks `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// Thinking and Signature are a thinking block's.
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	// CacheControl marks the end of a prompt prefix to cache.
	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// Source is where an image or document block's bytes come from.
type Source struct {
	Type      string `json:"type"` // base64, url or text
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Tool is a tool definition. A client tool has no type (or "custom");
// Anthropic's server tools (web search, code execution...) have one.
type Tool struct {
	Type        string          `json:"type,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// MaxUses bounds a server tool's uses in one answer.
	MaxUses *int `json:"max_uses,omitempty"`
	// CacheControl marks the end of a prompt prefix to cache.
	CacheControl *CacheControl `json:"cache_control,omitempty"`
}

// ToolChoice is auto, any, a named tool, or none.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

// Metadata is the request's metadata.
type Metadata struct {
	UserID string `json:"user_id,omitempty"`
}

// Response is a whole Messages answer; message_start carries one too,
// with empty content and a null stop reason.
type Response struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []Block `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        Usage   `json:"usage"`
}

// Usage is Anthropic's token count: input_tokens excludes the cache reads
// and writes, which are counted apart.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Stop reasons.
const (
	StopEndTurn   = "end_turn"
	StopMaxTokens = "max_tokens"
	StopSequence  = "stop_sequence"
	StopToolUse   = "tool_use"
	StopRefusal   = "refusal"
)

// TokenCount is the body of a /v1/messages/count_tokens answer.
type TokenCount struct {
	InputTokens int `json:"input_tokens"`
}

// Model is one entry of GET /v1/models as Anthropic's SDKs read it.
type Model struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// ModelList is the body of GET /v1/models for Anthropic clients.
type ModelList struct {
	Data    []Model `json:"data"`
	HasMore bool    `json:"has_more"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
}
