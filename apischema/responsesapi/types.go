package responsesapi

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/switchyard/switchyard/apischema/jsonform"
	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// Request is a POST /v1/responses body. Pointer fields are optional; nil
// means the client did not send them.
type Request struct {
	Model           string  `json:"model"`
	Input           Input   `json:"input"`
	Instructions    *string `json:"instructions,omitempty"`
	MaxOutputTokens *int    `json:"max_output_tokens,omitempty"`
	// MaxToolCalls bounds the hosted tools' calls of one answer.
	MaxToolCalls      *int              `json:"max_tool_calls,omitempty"`
	Temperature       *float64          `json:"temperature,omitempty"`
	TopP              *float64          `json:"top_p,omitempty"`
	Stream            bool              `json:"stream,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ToolChoice        *ToolChoice       `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	Text              *TextConfig       `json:"text,omitempty"`
	Reasoning         *Reasoning        `json:"reasoning,omitempty"`
	User              string            `json:"user,omitempty"`
	SafetyIdentifier  string            `json:"safety_identifier,omitempty"`
	Metadata          map[string]string `json:"metadata,omitempty"`
	ServiceTier       string            `json:"service_tier,omitempty"`
	Truncation        string            `json:"truncation,omitempty"`
	// PromptCacheOptions is read for its lifetime only (see
	// [openai.CheckPromptCache]).
	PromptCacheOptions *openaiapi.PromptCacheOptions `json:"prompt_cache_options,omitempty"`

	// What needs state the gateway does not keep; the parser refuses it.
	Store              *bool           `json:"store,omitempty"`
	PreviousResponseID *string         `json:"previous_response_id,omitempty"`
	Conversation       json.RawMessage `json:"conversation,omitempty"`
	Background         *bool           `json:"background,omitempty"`
	Prompt             json.RawMessage `json:"prompt,omitempty"`
}

// Input is the request's input: a string, which stands for one user
// message, or a list of items.
type Input struct {
	Items []Item
	// Set is true when the body had an input that was not null.
	Set bool
}

// UnmarshalJSON implements [json.Unmarshaler].
func (in *Input) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*in = Input{}
		return nil
	}
	items, err := jsonform.OneOrMany(b, func(s string) Item {
		return Item{Type: ItemMessage, Role: "user", Content: Contents{{Type: "input_text", Text: s}}}
	})
	if errors.Is(err, jsonform.ErrShape) {
		return errors.New("input must be a string or an array of input items")
	}
	*in = Input{Set: true, Items: items}
	return err
}

// Item types the gateway reads. Other types pass untouched to OpenAI; a
// translation refuses what it cannot carry.
const (
	ItemMessage            = "message"
	ItemFunctionCall       = "function_call"
	ItemFunctionCallOutput = "function_call_output"
	ItemReasoning          = "reasoning"
	ItemReference          = "item_reference"
	ItemWebSearchCall      = "web_search_call"
)

// Item is one input item of any type; each type uses its own subset of
// the fields. A message may leave out its type. Only the fields of the
// types the gateway reads are decoded: an item of another type is its
// type alone, whatever its other members hold.
type Item struct {
	Type string `json:"type,omitempty"`
	ID   string `json:"id,omitempty"`
	// Role and Content are a message's.
	Role    string   `json:"role,omitempty"`
	Content Contents `json:"content,omitempty"`
	// CallID, Name, Namespace (for a function of a namespace tool) and
	// Arguments are a function call's; CallID and Output a function call
	// output's.
	CallID    string   `json:"call_id,omitempty"`
	Name      string   `json:"name,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Arguments string   `json:"arguments,omitempty"`
	Output    Contents `json:"output,omitempty"`
}

// UnmarshalJSON implements [json.Unmarshaler].
func (it *Item) UnmarshalJSON(b []byte) error {
	typ, err := typeOf(b)
	if err != nil {
		return err
	}
	switch typ {
	case "", ItemMessage, ItemFunctionCall, ItemFunctionCallOutput:
		type plain Item
		var p plain
		err = json.Unmarshal(b, &p)
		*it = Item(p)
		return err
	}
	*it = Item{Type: typ}
	return nil
}

// typeOf reads the type member of a JSON object.
func typeOf(b []byte) (string, error) {
	var head struct {
		Type string `json:"type"`
	}
	err := json.Unmarshal(b, &head)
	return head.Type, err
}

// Contents is a message's content or a function call's output: a string,
// which stands for one text part, or an array of parts.
type Contents []Part

// UnmarshalJSON implements [json.Unmarshaler].
func (c *Contents) UnmarshalJSON(b []byte) error {
	parts, err := jsonform.OneOrMany(b, func(s string) Part { return Part{Type: "input_text", Text: s} })
	if errors.Is(err, jsonform.ErrShape) {
		return errors.New("content must be a string or an array of content parts")
	}
	*c = parts
	return err
}

// Part is one content part: input_text, input_image, input_file (a user's),
// output_text or refusal (an assistant's earlier answer). A part of
// another type is its type alone.
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileURL  string `json:"file_url,omitempty"`
	Filename string `json:"filename,omitempty"`
	Refusal  string `json:"refusal,omitempty"`
}

// UnmarshalJSON implements [json.Unmarshaler].
func (p *Part) UnmarshalJSON(b []byte) error {
	typ, err := typeOf(b)
	if err != nil {
		return err
	}
	switch typ {
	case "input_text", "output_text", "text", "refusal", "input_image", "input_file":
		type plain Part
		var q plain
		err = json.Unmarshal(b, &q)
		*p = Part(q)
		return err
	}
	*p = Part{Type: typ}
	return nil
}

// Tool types the gateway reads.
const (
	ToolFunction  = "function"
	ToolNamespace = "namespace"
)

// Tool is a tool definition: a function, a namespace (a named group of
// function tools, whose calls name the namespace beside the function), or
// a tool of another type (OpenAI's hosted tools, a client's custom
// tools...), whose members are not read. A tool encodes as the client
// wrote it.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
	// Tools are a namespace's.
	Tools []Tool `json:"tools,omitempty"`

	raw json.RawMessage
}

// UnmarshalJSON implements [json.Unmarshaler].
func (t *Tool) UnmarshalJSON(b []byte) error {
	typ, err := typeOf(b)
	if err != nil {
		return err
	}
	*t = Tool{Type: typ}
	if typ == ToolFunction || typ == ToolNamespace {
		type plain Tool
		var p plain
		if err := json.Unmarshal(b, &p); err != nil {
			return err
		}
		*t = Tool(p)
	}
	t.raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON implements [json.Marshaler]: the client's own bytes.
func (t Tool) MarshalJSON() ([]byte, error) {
	if t.raw != nil {
		return t.raw, nil
	}
	type plain Tool
	return json.Marshal(plain(t))
}

// ToolChoice is "none", "auto", "required", {"type":"function","name"}
// (with the namespace for a function of one), {"type":"allowed_tools",
// "mode","tools"}, or another choice (a hosted tool, a custom tool),
// which is kept as the client wrote it.
type ToolChoice struct {
	Mode      string // none, auto, required; empty when Function is set
	Function  string
	Namespace string
	// Allowed names the function tools (namespace, name) an allowed_tools
	// choice lets the model call, nil for another choice.
	Allowed [][2]string

	raw json.RawMessage
}

var errToolChoice = errors.New(`tool_choice must be "none", "auto", "required" or an object with a type`)

// UnmarshalJSON implements [json.Unmarshaler].
func (t *ToolChoice) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*t = ToolChoice{raw: append(json.RawMessage(nil), b...)}
	if len(b) > 0 && b[0] == '"' {
		if json.Unmarshal(b, &t.Mode) != nil {
			return errToolChoice
		}
		return nil
	}
	var obj struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Mode      string `json:"mode"`
		Tools     []struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"tools"`
	}
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &obj) != nil || obj.Type == "" {
		return errToolChoice
	}
	switch obj.Type {
	case "function":
		t.Function, t.Namespace = obj.Name, obj.Namespace
	case "allowed_tools":
		t.Mode, t.Allowed = obj.Mode, [][2]string{}
		for _, f := range obj.Tools {
			if f.Type == ToolFunction {
				t.Allowed = append(t.Allowed, [2]string{f.Namespace, f.Name})
			}
		}
	}
	return nil
}

// MarshalJSON implements [json.Marshaler]: the client's own form, else
// the mode or function.
func (t ToolChoice) MarshalJSON() ([]byte, error) {
	switch {
	case t.raw != nil:
		return t.raw, nil
	case t.Function != "":
		return json.Marshal(struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}{"function", t.Function})
	}
	return json.Marshal(t.Mode)
}

// TextConfig is the request's text options: the output format.
type TextConfig struct {
	Format *Format `json:"format,omitempty"`
}

// Format is text.format: text, json_object or json_schema (whose name,
// schema and strictness sit beside the type).
type Format struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Reasoning is the request's reasoning options.
type Reasoning struct {
	Effort string `json:"effort,omitempty"`
}

// Response statuses.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
)

// Response is a whole answer; response.created, response.in_progress and
// response.completed carry one too. Output holds [Message] and
// [FunctionCall] items.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Error              *ErrorObject       `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []any              `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Store              bool               `json:"store"`
	Temperature        *float64           `json:"temperature"`
	Text               TextConfig         `json:"text"`
	ToolChoice         ToolChoice         `json:"tool_choice"`
	Tools              []Tool             `json:"tools"`
	TopP               *float64           `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *Usage             `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
}

// ErrorObject is a failed response's error.
type ErrorObject struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete: max_output_tokens
// or content_filter.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// Message is an assistant message output item.
type Message struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Status  string `json:"status"`
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

// OutputText is a message's text part.
type OutputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

// Refusal is a message's refusal part.
type Refusal struct {
	Type    string `json:"type"`
	Refusal string `json:"refusal"`
}

// FunctionCall is a function call output item. A call to a function of a
// namespace tool names the function and, beside it, the namespace.
type FunctionCall struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

// Usage is the Responses API's token count: input_tokens includes the
// cached ones, output_tokens the reasoning ones.
type Usage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails breaks input tokens down.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
	// CacheWriteTokens are the input tokens written to the prompt cache,
	// which OpenAI's newer models bill above the input price.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// OutputTokensDetails breaks output tokens down.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}
