package openaiapi

// ChatCompletion is a non-streamed chat completion.
type ChatCompletion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []Choice `json:"choices"`
	Usage             *Usage   `json:"usage,omitempty"`
	SystemFingerprint *string  `json:"system_fingerprint,omitempty"`
}

// Choice is one choice of a chat completion.
type Choice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	Logprobs     any             `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// ResponseMessage is the assistant message of a choice.
type ResponseMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	Refusal   *string    `json:"refusal"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ChatCompletionChunk is one streamed event.
type ChatCompletionChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	// Usage is null on every chunk but the last when the client asked for
	// usage; UsageField controls that.
	Usage *Usage `json:"usage,omitempty"`
}

// ChunkChoice is a choice delta.
type ChunkChoice struct {
	Index        int     `json:"index"`
	Delta        Delta   `json:"delta"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

// Delta is the incremental part of a chunk.
type Delta struct {
	Role      string     `json:"role,omitempty"`
	Content   *string    `json:"content,omitempty"`
	Refusal   *string    `json:"refusal,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Usage is token usage as OpenAI reports it: cached tokens are a subset of
// prompt tokens, reasoning tokens a subset of completion tokens.
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
	// ServerToolUse counts the provider's own tools the answer ran, which
	// it bills per use beside the tokens. It is the gateway's count, read
	// from answers of other APIs (a Responses answer's web_search_call
	// items, a Messages answer's server_tool_use), never on a chat wire.
	ServerToolUse ServerToolUse `json:"-"`
}

// ServerToolUse counts server tool uses by kind, as Anthropic's
// usage.server_tool_use does.
type ServerToolUse struct {
	WebSearchRequests int
}

// PromptTokensDetails breaks prompt tokens down.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
	// CacheWriteTokens are the prompt tokens the provider wrote to its
	// prompt cache, billed above the input price.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// CacheWrite5mTokens and CacheWrite1hTokens break CacheWriteTokens
	// down by lifetime, as far as the provider did (Anthropic's
	// cache_creation): writes it did not attribute are in neither. They
	// are the gateway's, never on a chat wire.
	CacheWrite5mTokens int `json:"-"`
	CacheWrite1hTokens int `json:"-"`
}

// CompletionTokensDetails breaks completion tokens down.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Cached returns the cached prompt tokens, 0 when absent.
func (u *Usage) Cached() int {
	if u == nil || u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// Finish reasons: the only five values OpenAI clients know.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
	FinishFunctionCall  = "function_call"
)

// Model is one entry of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is the body of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}
