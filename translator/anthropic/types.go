package anthropic

import "encoding/json"

// apiVersion is the Messages API version the translator speaks.
const apiVersion = "2023-06-01"

// jsonToolName is the tool that emulates OpenAI's JSON mode: the model is
// made to call it, and its input becomes the message content.
const jsonToolName = "json_tool_call"

// request is a Messages API request body.
type request struct {
	Model         string      `json:"model"`
	MaxTokens     int         `json:"max_tokens"`
	System        []block     `json:"system,omitempty"`
	Messages      []message   `json:"messages"`
	StopSequences []string    `json:"stop_sequences,omitempty"`
	Temperature   *float64    `json:"temperature,omitempty"`
	TopP          *float64    `json:"top_p,omitempty"`
	Stream        bool        `json:"stream,omitempty"`
	Tools         []tool      `json:"tools,omitempty"`
	ToolChoice    *toolChoice `json:"tool_choice,omitempty"`
	Metadata      *metadata   `json:"metadata,omitempty"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is a content block of any type, in requests and responses; each
// type uses its own subset of the fields.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Source    *source         `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Content is a tool_result's content: a string or an array of blocks.
	Content json.RawMessage `json:"content,omitempty"`
}

// source is where an image or document block's bytes come from.
type source struct {
	Type      string `json:"type"` // base64 or url
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type                   string `json:"type"` // auto, any, tool, none
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type metadata struct {
	UserID string `json:"user_id"`
}

// response is a whole Messages API response; a message_start event carries
// one too. Type is "error" when the body is an error.
type response struct {
	Type       string    `json:"type"`
	Content    []block   `json:"content"`
	StopReason string    `json:"stop_reason"`
	Usage      *usage    `json:"usage"`
	Error      *apiError `json:"error"`
}

// usage holds Anthropic's counts. Pointers tell a count that was reported
// from one that was not: a message_delta carries only some of them.
type usage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	// CacheCreation breaks cache_creation_input_tokens down by the
	// lifetime each write was asked for, billed at rates of their own.
	CacheCreation *struct {
		Ephemeral5m *int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h *int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	// ServerToolUse counts the server tools Anthropic ran for the answer,
	// billed per use.
	ServerToolUse *struct {
		WebSearchRequests *int `json:"web_search_requests"`
	} `json:"server_tool_use"`
}

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// event is any streamed event; each type uses its own subset of fields.
type event struct {
	Type         string    `json:"type"`
	Message      *response `json:"message"`
	Index        int       `json:"index"`
	ContentBlock *block    `json:"content_block"`
	Delta        *delta    `json:"delta"`
	Usage        *usage    `json:"usage"`
	Error        *apiError `json:"error"`
}

// delta is a content_block_delta's or a message_delta's delta.
type delta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	StopReason  string `json:"stop_reason"`
}
