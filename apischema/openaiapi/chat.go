package openaiapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/switchyard/switchyard/apischema/jsonform"
)

// ChatRequest is a POST /v1/chat/completions body. Pointer fields are
// optional; nil means the client did not send them.
type ChatRequest struct {
	Model               string             `json:"model"`
	Messages            []Message          `json:"messages"`
	MaxTokens           *int               `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int               `json:"max_completion_tokens,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	TopP                *float64           `json:"top_p,omitempty"`
	N                   *int               `json:"n,omitempty"`
	Stop                StringList         `json:"stop,omitempty"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *StreamOptions     `json:"stream_options,omitempty"`
	Tools               []Tool             `json:"tools,omitempty"`
	ToolChoice          *ToolChoice        `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool              `json:"parallel_tool_calls,omitempty"`
	ResponseFormat      *ResponseFormat    `json:"response_format,omitempty"`
	Seed                *int64             `json:"seed,omitempty"`
	User                string             `json:"user,omitempty"`
	Logprobs            *bool              `json:"logprobs,omitempty"`
	TopLogprobs         *int               `json:"top_logprobs,omitempty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty,omitempty"`
	PresencePenalty     *float64           `json:"presence_penalty,omitempty"`
	LogitBias           map[string]float64 `json:"logit_bias,omitempty"`
	ReasoningEffort     string             `json:"reasoning_effort,omitempty"`
	ServiceTier         string             `json:"service_tier,omitempty"`
	Metadata            map[string]string  `json:"metadata,omitempty"`
	// WebSearchOptions and Audio ask for features priced apart from
	// tokens (a fee per search, audio tokens); they are only read to be
	// refused.
	WebSearchOptions json.RawMessage `json:"web_search_options,omitempty"`
	Audio            json.RawMessage `json:"audio,omitempty"`
	// PromptCacheOptions sets OpenAI's prompt cache; only its lifetime is
	// read, to refuse one whose writes cost more than the catalog prices.
	PromptCacheOptions *PromptCacheOptions `json:"prompt_cache_options,omitempty"`

	// PricedToolUses is not chat's: it is the most uses of server tools
	// billed per use (Anthropic's web search) that a request of another
	// API, read as chat, lets its answer make; the budget reservation
	// covers them.
	PricedToolUses int `json:"-"`
	// CachesForAnHour is not chat's either: a request of another API asks
	// its provider to keep a prompt-cache entry for an hour (Anthropic's
	// ttl "1h"), whose writes cost more. Writes the provider reports
	// without their lifetime are charged at the hour's rate.
	CachesForAnHour bool `json:"-"`
}

// PromptCacheOptions are OpenAI's prompt-cache settings (GPT-5.6 and
// later models).
type PromptCacheOptions struct {
	// TTL is the least time a written prefix is kept: "30m", the default,
	// is the lifetime whose writes the catalog prices (cache_write).
	TTL string `json:"ttl,omitempty"`
}

// OutputCap returns the client's output token cap: max_completion_tokens
// wins over the deprecated max_tokens; 0 means none was sent.
func (r *ChatRequest) OutputCap() int {
	if r.MaxCompletionTokens != nil {
		return *r.MaxCompletionTokens
	}
	if r.MaxTokens != nil {
		return *r.MaxTokens
	}
	return 0
}

// Choices is how many answers the client asked for (n), each written up to
// the output cap and billed.
func (r *ChatRequest) Choices() int {
	if r.N != nil && *r.N > 1 {
		return *r.N
	}
	return 1
}

// IncludeUsage reports whether the client asked for a usage chunk.
func (r *ChatRequest) IncludeUsage() bool {
	return r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// StreamOptions is stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one chat message of any role.
type Message struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Refusal    *string    `json:"refusal,omitempty"`
}

// Content is a message's content: a string, an array of parts, or null.
type Content struct {
	Text  string
	Parts []Part
	// IsParts is true when the client sent an array (even of one text part).
	IsParts bool
	Null    bool
	// Set is true when the message had a content field at all.
	Set bool
}

// UnmarshalJSON implements [json.Unmarshaler].
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*c = Content{Null: true, Set: true}
		return nil
	case b[0] == '"':
		*c = Content{Set: true}
		// encoding/json hands over a value it has already checked, so a
		// string with no escapes and valid UTF-8 is its bytes between the
		// quotes: the common case skips a second decoder (its allocations
		// and the stack it grows on a fresh gRPC stream's goroutine).
		if inner := b[1 : len(b)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			c.Text = string(inner)
			return nil
		}
		return json.Unmarshal(b, &c.Text)
	case b[0] == '[':
		*c = Content{IsParts: true, Set: true}
		return json.Unmarshal(b, &c.Parts)
	default:
		return errors.New("content must be a string, an array of content parts or null")
	}
}

// MarshalJSON implements [json.Marshaler].
func (c Content) MarshalJSON() ([]byte, error) {
	switch {
	case c.IsParts:
		return json.Marshal(c.Parts)
	case c.Null:
		return []byte("null"), nil
	default:
		return json.Marshal(c.Text)
	}
}

// PlainText returns the text of the content: the string, or the text parts
// joined by newlines.
func (c *Content) PlainText() string {
	if !c.IsParts {
		return c.Text
	}
	var b []byte
	for _, p := range c.Parts {
		if p.Type == "text" {
			if len(b) > 0 {
				b = append(b, '\n')
			}
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// Part is one content part.
type Part struct {
	Type       string      `json:"type"`
	Text       string      `json:"text,omitempty"`
	ImageURL   *ImageURL   `json:"image_url,omitempty"`
	InputAudio *InputAudio `json:"input_audio,omitempty"`
	File       *FilePart   `json:"file,omitempty"`
	Refusal    string      `json:"refusal,omitempty"`
}

// ImageURL is an image part: an http(s) URL or a data URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// InputAudio is an audio part.
type InputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// FilePart is a file part.
type FilePart struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
}

// ToolCall is an assistant's call of a function tool.
type ToolCall struct {
	Index    *int         `json:"index,omitempty"` // set only in stream deltas
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and its arguments as a JSON string.
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Tool is a tool definition.
type Tool struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef defines a function tool.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolChoice is "none", "auto", "required" or a named function.
type ToolChoice struct {
	Mode     string // none, auto, required; empty when Function is set
	Function string
}

// UnmarshalJSON implements [json.Unmarshaler].
func (t *ToolChoice) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*t = ToolChoice{}
		if err := json.Unmarshal(b, &t.Mode); err != nil {
			return err
		}
		switch t.Mode {
		case "none", "auto", "required":
			return nil
		}
		return errors.New(`tool_choice must be "none", "auto", "required" or {"type":"function","function":{"name":...}}`)
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
		return errors.New(`tool_choice must be "none", "auto", "required" or {"type":"function","function":{"name":...}}`)
	}
	*t = ToolChoice{Function: obj.Function.Name}
	return nil
}

// MarshalJSON implements [json.Marshaler].
func (t ToolChoice) MarshalJSON() ([]byte, error) {
	if t.Function != "" {
		return json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": t.Function}})
	}
	return json.Marshal(t.Mode)
}

// ResponseFormat is response_format.
type ResponseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is response_format.json_schema.
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// StringList accepts a string or an array of strings (as "stop" does).
type StringList []string

// UnmarshalJSON implements [json.Unmarshaler].
func (s *StringList) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*s = nil
		return nil
	}
	many, err := jsonform.OneOrMany(b, func(one string) string { return one })
	if err != nil {
		return errors.New("must be a string or an array of strings")
	}
	*s = many
	return nil
}
