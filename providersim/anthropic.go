package providersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// anthropic is the Messages API dialect (section 2 of the wire-format
// reference).
type anthropic struct{}

func (a anthropic) routes(p *provider) {
	p.handle("POST /v1/messages", a.messages)
	p.handle("POST /v1/messages/count_tokens", a.countTokens)
	p.handle("GET /v1/models", a.listModels)
}

// defaultAnthropicModels are listed when the config names none.
var defaultAnthropicModels = []string{"claude-3-5-sonnet-20241022", "claude-3-5-haiku-20241022"}

// listModels is the Models API: newest first, paged by limit (default 20).
func (anthropic) listModels(x *exchange) {
	names := x.p.cfg.Models
	if len(names) == 0 {
		names = defaultAnthropicModels
	}
	limit := len(names)
	if v := x.r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			x.fail(apiError{status: http.StatusBadRequest, typ: "invalid_request_error", message: "limit: Input should be between 1 and 1000"})
			return
		}
		limit = min(n, len(names))
	}
	type model struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	data := make([]model, limit)
	for i, n := range names[:limit] {
		data[i] = model{Type: "model", ID: n, DisplayName: n, CreatedAt: time.Unix(modelCreated, 0).UTC().Format(time.RFC3339)}
	}
	x.writeJSON(http.StatusOK, map[string]any{"data": data, "has_more": limit < len(names), "first_id": names[0], "last_id": names[limit-1]})
}

func (anthropic) streaming(_ *http.Request, body []byte) bool { return streamFlag(body) }

// authorized accepts the key in x-api-key or as a bearer token: the
// current Go SDK's WithAPIKey sends the latter.
func (anthropic) authorized(r *http.Request, key string) bool {
	return keyMatches(r.Header.Get("x-api-key"), key) || keyMatches(r.Header.Get("Authorization"), "Bearer "+key)
}

func (anthropic) authError() apiError {
	return apiError{status: http.StatusUnauthorized, typ: "authentication_error", message: "invalid x-api-key"}
}

func (anthropic) headers(h http.Header, q quota) {
	h.Set("request-id", "req_sim"+q.requestID)
	reset := q.now.Add(time.Minute).UTC().Format(time.RFC3339)
	tokens := q.remainingTokens()
	if q.remaining == nil {
		// Anthropic rounds remaining tokens to the nearest thousand.
		tokens = (tokens + 500) / 1000 * 1000
	}
	for _, kind := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		limit, remaining := int64(limitTokens), tokens
		if kind == "requests" {
			limit, remaining = limitRequests, q.remainingRequests()
		}
		h.Set("anthropic-ratelimit-"+kind+"-limit", strconv.FormatInt(limit, 10))
		h.Set("anthropic-ratelimit-"+kind+"-remaining", strconv.FormatInt(remaining, 10))
		h.Set("anthropic-ratelimit-"+kind+"-reset", reset)
	}
}

func (a anthropic) statusError(status int, retryAfter time.Duration) apiError {
	e := apiError{status: status, typ: "invalid_request_error", message: http.StatusText(status)}
	switch status {
	case http.StatusUnauthorized:
		return a.authError()
	case http.StatusPaymentRequired:
		e.typ, e.message = "billing_error", "Your credit balance is too low to access the Anthropic API."
	case http.StatusForbidden:
		e.typ, e.message = "permission_error", "Your API key does not have permission to use the specified resource."
	case http.StatusNotFound:
		e.typ, e.message = "not_found_error", "The requested resource could not be found."
	case http.StatusRequestEntityTooLarge:
		e.typ, e.message = "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case http.StatusTooManyRequests:
		e.typ, e.retryAfter = "rate_limit_error", retryAfter
		e.message = "Number of request tokens has exceeded your per-minute rate limit"
	case http.StatusGatewayTimeout:
		e.typ, e.message = "timeout_error", "Request timed out"
	case statusOverloaded:
		e.typ, e.message = "overloaded_error", "Overloaded"
	default:
		if status >= 500 {
			e.typ, e.message = "api_error", "Internal server error"
		}
	}
	return e
}

// statusOverloaded is Anthropic's non-standard "API overloaded" status.
const statusOverloaded = 529

func (anthropic) writeError(w http.ResponseWriter, e apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("retry-after", retryAfterSeconds(e.retryAfter))
	}
	body := struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}{Type: "error", RequestID: w.Header().Get("request-id")}
	body.Error.Type, body.Error.Message = e.typ, e.message
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(mustJSON(body))
}

func (anthropic) malformed(stream bool) (string, []byte) {
	if stream {
		return "text/event-stream", []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\n\n")
	}
	return "application/json", []byte(`{"id":"msg_malformed","type":"message","content":[{"type":"te`)
}

type anRequest struct {
	Model        string          `json:"model"`
	MaxTokens    *int            `json:"max_tokens"`
	Messages     []anMessage     `json:"messages"`
	System       json.RawMessage `json:"system"`
	Temperature  *float64        `json:"temperature"`
	Stream       bool            `json:"stream"`
	Tools        []anTool        `json:"tools"`
	ToolChoice   *anToolChoice   `json:"tool_choice"`
	CacheControl json.RawMessage `json:"cache_control"`
	OutputConfig *struct {
		Format *anFormat `json:"format"`
	} `json:"output_config"`
	// OutputFormat is where the structured-outputs beta put the format;
	// the API still takes it.
	OutputFormat *anFormat `json:"output_format"`
}

// anFormat is a structured-output format: a JSON schema.
type anFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

type anMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	CacheControl json.RawMessage `json:"cache_control"`
}

type anTool struct {
	Name         string          `json:"name"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control"`
}

type anToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

func anInvalid(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", message: fmt.Sprintf(format, args...)}
}

// anBlocks reads content that is either a string or a list of blocks; a
// string becomes one text block.
func anBlocks(raw json.RawMessage) ([]anBlock, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anBlock{{Type: "text", Text: s}}, true
	}
	var blocks []anBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return nil, false
	}
	return blocks, true
}

func (a anthropic) messages(x *exchange) {
	if x.r.Header.Get("anthropic-version") == "" {
		x.fail(*anInvalid("anthropic-version: header is required"))
		return
	}
	var req anRequest
	if err := json.Unmarshal(x.body, &req); err != nil {
		x.fail(*anInvalid("There was an error parsing the body of your request: %v", err))
		return
	}
	conv, errp := a.conversation(req)
	if errp != nil {
		x.fail(*errp)
		return
	}
	if !x.p.knownModel(req.Model) {
		x.fail(apiError{status: http.StatusNotFound, typ: "not_found_error", message: "model: " + req.Model})
		return
	}
	r := x.answer(conv)
	x.p.served(r.promptTokens, r.completionTokens)
	seq := x.p.nextSeq()
	msg := anMessageResp{
		ID: fmt.Sprintf("msg_sim%06d", seq), Type: "message", Role: "assistant", Model: req.Model,
		Content: []anContent{}, Usage: anUsageFor(r, anCacheMarks(req)),
	}
	if r.call != nil {
		msg.Content = append(msg.Content, anContent{Type: "tool_use", ID: fmt.Sprintf("toolu_sim%06d", seq), Name: r.call.name, Input: r.call.args})
	} else if r.text != "" {
		msg.Content = append(msg.Content, anContent{Type: "text", Text: &r.text})
	}
	if req.Stream {
		x.writeStream("text/event-stream", anEvents(msg, r))
		return
	}
	reason := r.finish.anthropic()
	msg.StopReason = &reason
	x.writeJSON(http.StatusOK, msg)
}

// countTokens answers /v1/messages/count_tokens: the request is checked
// as a Messages request (which takes no max_tokens here) and its prompt
// counted with the simulator's tokenizer.
func (a anthropic) countTokens(x *exchange) {
	if x.r.Header.Get("anthropic-version") == "" {
		x.fail(*anInvalid("anthropic-version: header is required"))
		return
	}
	var req anRequest
	if err := json.Unmarshal(x.body, &req); err != nil {
		x.fail(*anInvalid("There was an error parsing the body of your request: %v", err))
		return
	}
	if req.MaxTokens != nil {
		x.fail(*anInvalid("max_tokens: Extra inputs are not permitted"))
		return
	}
	one := 1
	req.MaxTokens = &one
	conv, errp := a.conversation(req)
	if errp != nil {
		x.fail(*errp)
		return
	}
	if !x.p.knownModel(req.Model) {
		x.fail(apiError{status: http.StatusNotFound, typ: "not_found_error", message: "model: " + req.Model})
		return
	}
	x.writeJSON(http.StatusOK, map[string]int{"input_tokens": respond(conv).promptTokens})
}

// cacheMarks counts a request's cache_control marks, and those of them
// that ask for an hour (ttl "1h").
type cacheMarks struct{ all, hour int }

// anCacheMarks counts the cache_control marks of the request, its tools,
// its system blocks and its messages' blocks.
func anCacheMarks(req anRequest) cacheMarks {
	var m cacheMarks
	mark := func(raw json.RawMessage) {
		if len(raw) == 0 {
			return
		}
		m.all++
		var c struct {
			TTL string `json:"ttl"`
		}
		if json.Unmarshal(raw, &c) == nil && c.TTL == "1h" {
			m.hour++
		}
	}
	mark(req.CacheControl)
	for _, t := range req.Tools {
		mark(t.CacheControl)
	}
	if sys, ok := anBlocks(req.System); ok && len(req.System) > 0 {
		for _, b := range sys {
			mark(b.CacheControl)
		}
	}
	for _, msg := range req.Messages {
		blocks, _ := anBlocks(msg.Content)
		for _, b := range blocks {
			mark(b.CacheControl)
		}
	}
	return m
}

// conversation validates the request with the rules the Messages API
// enforces and extracts what the reply rules need. It is deliberately
// stricter than the API in one place: consecutive same-role turns, which
// the API merges, are refused so a gateway is held to canonical requests.
// Mid-conversation system turns take no part in that alternation.
func (anthropic) conversation(req anRequest) (conversation, *apiError) {
	c := conversation{model: req.Model, messages: len(req.Messages)}
	switch {
	case req.Model == "":
		return c, anInvalid("model: Field required")
	case req.MaxTokens == nil:
		return c, anInvalid("max_tokens: Field required")
	case *req.MaxTokens < 0:
		return c, anInvalid("max_tokens: Input should be greater than or equal to 0")
	case req.Messages == nil:
		return c, anInvalid("messages: Field required")
	case len(req.Messages) == 0:
		return c, anInvalid("messages: at least one message is required")
	case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1):
		return c, anInvalid("temperature: range: 0..1")
	}
	c.maxTokens, c.hasMax = *req.MaxTokens, true
	if len(req.System) > 0 && string(req.System) != "null" {
		sys, ok := anBlocks(req.System)
		if !ok {
			return c, anInvalid("system: Input should be a valid string or a list of text blocks")
		}
		for i, b := range sys {
			if strings.TrimSpace(b.Text) == "" {
				return c, anInvalid("system.%d.text: text content blocks must contain non-whitespace text", i)
			}
			c.textChars += chars(b.Text)
		}
		c.messages++
	}
	parsed := make([][]anBlock, len(req.Messages))
	toolBlocks := false
	prev := "" // the role of the last user or assistant turn
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" && m.Role != "system" {
			return c, anInvalid("messages.%d.role: Input should be 'user', 'assistant' or 'system'", i)
		}
		if i == 0 && m.Role != "user" {
			return c, anInvalid("messages: first message must use the \"user\" role")
		}
		blocks, ok := anBlocks(m.Content)
		if !ok {
			return c, anInvalid("messages.%d.content: Input should be a valid string or a list of content blocks", i)
		}
		if m.Role == "system" {
			if err := anCheckSystemTurn(req.Messages, parsed, blocks, i); err != nil {
				return c, err
			}
			for _, b := range blocks {
				c.textChars += chars(b.Text)
			}
			parsed[i] = blocks
			if req.Messages[i-1].Role == "assistant" {
				// After a server tool call's pause, the assistant turn
				// that follows continues it.
				prev = ""
			}
			continue
		}
		if m.Role == prev {
			return c, anInvalid("messages.%d: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", i, m.Role)
		}
		prev = m.Role
		last := i == len(req.Messages)-1
		if len(blocks) == 0 || string(m.Content) == `""` {
			if last && m.Role == "assistant" {
				continue
			}
			return c, anInvalid("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		for j, b := range blocks {
			if err := anCheckBlock(b, m.Role, i, j); err != nil {
				return c, err
			}
			toolBlocks = toolBlocks || b.Type == "tool_use" || b.Type == "tool_result"
		}
		if last && m.Role == "assistant" {
			if t := blocks[len(blocks)-1]; t.Type == "text" && strings.TrimRightFunc(t.Text, isSpace) != t.Text {
				return c, anInvalid("messages: final assistant content cannot end with trailing whitespace")
			}
		}
		parsed[i] = blocks
	}
	if err := anCheckToolPairing(req.Messages, parsed); err != nil {
		return c, err
	}
	if toolBlocks && len(req.Tools) == 0 {
		return c, anInvalid("Requests which include `tool_use` or `tool_result` blocks must define tools.")
	}
	for i, blocks := range parsed {
		role := req.Messages[i].Role
		if role == "system" {
			continue
		}
		var texts []string
		images, calls := 0, 0
		var result *string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
				c.textChars += chars(b.Text)
			case "image":
				images++
			case "tool_use":
				calls++
			case "tool_result":
				t := anResultText(b.Content)
				c.textChars += chars(t)
				if result == nil {
					result = &t
				}
			}
		}
		if role == "user" {
			c.lastUserText, c.images = strings.Join(texts, " "), images
			if result == nil {
				c.promptTurn(c.lastUserText)
			}
		} else {
			c.assistantCalls(calls)
		}
		// The reply answers the last user or assistant turn: system turns
		// after it only instruct.
		c.toolResult = result
		c.lastIsUser = role == "user" && result == nil
	}
	for _, t := range req.Tools {
		c.tools = append(c.tools, toolDef{name: t.Name, schema: t.InputSchema})
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Type {
		case "none":
			c.choice.mode = choiceNone
		case "any":
			c.choice.mode = choiceRequired
		case "tool":
			if !anHasTool(req.Tools, tc.Name) {
				return c, anInvalid("tool_choice.name: Tool '%s' not found in tools", tc.Name)
			}
			c.choice = toolChoice{mode: choiceForced, name: tc.Name}
		case "auto", "":
		default:
			return c, anInvalid("tool_choice.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", tc.Type)
		}
	}
	format, field := req.OutputFormat, "output_format"
	if req.OutputConfig != nil && req.OutputConfig.Format != nil {
		format, field = req.OutputConfig.Format, "output_config.format"
	}
	if format != nil {
		if format.Type != "json_schema" {
			return c, anInvalid("%s.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'json_schema'", field, format.Type)
		}
		if !isObject(format.Schema) {
			return c, anInvalid("%s.schema: Field required", field)
		}
		c.format = replyFormat{json: true, schema: format.Schema}
	}
	return c, nil
}

// anCheckSystemTurn applies the API's rules for a mid-conversation system
// message: text only, right after a user turn (or an assistant turn that
// ends in a server tool call), and followed by nothing or an assistant
// turn.
func anCheckSystemTurn(msgs []anMessage, parsed [][]anBlock, blocks []anBlock, i int) *apiError {
	if len(blocks) == 0 {
		return anInvalid("messages.%d: system messages must have non-empty content", i)
	}
	for j, b := range blocks {
		if b.Type != "text" {
			return anInvalid("messages.%d.content.%d.type: system messages may only hold text blocks, got %q", i, j, b.Type)
		}
		if strings.TrimSpace(b.Text) == "" {
			return anInvalid("messages.%d.content.%d.text: text content blocks must contain non-whitespace text", i, j)
		}
	}
	before := msgs[i-1].Role
	afterServerTool := before == "assistant" && len(parsed[i-1]) > 0 && parsed[i-1][len(parsed[i-1])-1].Type == "server_tool_use"
	if before != "user" && !afterServerTool {
		return anInvalid("messages.%d: a system message must immediately follow a user message or an assistant message ending in server tool use", i)
	}
	if i+1 < len(msgs) && msgs[i+1].Role != "assistant" {
		return anInvalid("messages.%d: a system message must be the last message or be followed by an assistant message", i)
	}
	return nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

func anHasTool(tools []anTool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func anCheckBlock(b anBlock, role string, i, j int) *apiError {
	switch b.Type {
	case "text":
		if b.Text == "" {
			return anInvalid("messages.%d.content.%d.text: text content blocks must be non-empty", i, j)
		}
		if strings.TrimSpace(b.Text) == "" {
			return anInvalid("messages.%d.content.%d.text: text content blocks must contain non-whitespace text", i, j)
		}
	case "tool_use":
		if role != "assistant" {
			return anInvalid("messages.%d.content.%d: `tool_use` blocks can only be in `assistant` messages", i, j)
		}
		var obj map[string]json.RawMessage
		if b.ID == "" || b.Name == "" || json.Unmarshal(b.Input, &obj) != nil || obj == nil {
			return anInvalid("messages.%d.content.%d.tool_use: id, name and an object input are required", i, j)
		}
	case "tool_result":
		if role != "user" {
			return anInvalid("messages.%d.content.%d: `tool_result` blocks can only be in `user` messages", i, j)
		}
	case "":
		return anInvalid("messages.%d.content.%d.type: Field required", i, j)
	}
	return nil
}

// anCheckToolPairing enforces that every assistant tool_use is answered by
// tool_result blocks at the very start of the next message, id for id, and
// that no tool_result answers anything else.
func anCheckToolPairing(msgs []anMessage, parsed [][]anBlock) *apiError {
	var open []string // tool_use ids of the previous assistant message
	for i, blocks := range parsed {
		if msgs[i].Role == "system" {
			continue
		}
		if msgs[i].Role == "assistant" {
			open = open[:0]
			for _, b := range blocks {
				if b.Type == "tool_use" {
					open = append(open, b.ID)
				}
			}
			if len(open) > 0 && i == len(parsed)-1 {
				return anInvalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(open, ", "))
			}
			continue
		}
		leading := 0
		for leading < len(blocks) && blocks[leading].Type == "tool_result" {
			leading++
		}
		if leading < len(open) {
			return anInvalid("messages.%d.content.0: Did not find %d `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.", i, len(open))
		}
		answered := map[string]bool{}
		for j, b := range blocks {
			if b.Type != "tool_result" {
				continue
			}
			if j >= leading {
				return anInvalid("messages.%d.content.%d: `tool_result` blocks must come before any other content in the message", i, j)
			}
			if indexOf(open, b.ToolUseID) < 0 {
				return anInvalid("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
			}
			answered[b.ToolUseID] = true
		}
		var missing []string
		for _, id := range open {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return anInvalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
		}
		open = open[:0]
	}
	return nil
}

// anResultText is the text of a tool_result's content: a string or text
// blocks.
func anResultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	blocks, ok := anBlocks(raw)
	if !ok {
		return ""
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, " ")
}

func (f finish) anthropic() string {
	switch f {
	case finishLength:
		return "max_tokens"
	case finishToolCall:
		return "tool_use"
	}
	return "end_turn"
}

type anMessageResp struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []anContent `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        anUsage     `json:"usage"`
}

type anContent struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type anUsage struct {
	InputTokens              int              `json:"input_tokens"`
	CacheCreationInputTokens int              `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int              `json:"cache_read_input_tokens"`
	CacheCreation            *anCacheCreation `json:"cache_creation,omitempty"`
	OutputTokens             int              `json:"output_tokens"`
	ServiceTier              string           `json:"service_tier,omitempty"`
}

// anCacheCreation breaks the cache writes down by lifetime.
type anCacheCreation struct {
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
}

// anUsageFor splits the prompt the way Anthropic reports it. With caching
// requested, half of it (rounded down) counts as read from the cache, a
// quarter (rounded down) as written to it, and input_tokens holds the
// rest. The writes are an hour's when every mark asks for an hour, half
// of them (rounded down) when some do, and 5 minutes' otherwise.
func anUsageFor(r reply, marks cacheMarks) anUsage {
	u := anUsage{InputTokens: r.promptTokens, OutputTokens: r.completionTokens, ServiceTier: "standard"}
	if marks.all == 0 {
		return u
	}
	u.CacheReadInputTokens = r.promptTokens / 2
	u.CacheCreationInputTokens = r.promptTokens / 4
	u.InputTokens -= u.CacheReadInputTokens + u.CacheCreationInputTokens
	hour := 0
	switch {
	case marks.hour == marks.all:
		hour = u.CacheCreationInputTokens
	case marks.hour > 0:
		hour = u.CacheCreationInputTokens / 2
	}
	u.CacheCreation = &anCacheCreation{Ephemeral5m: u.CacheCreationInputTokens - hour, Ephemeral1h: hour}
	return u
}

// Streaming event payloads; "type" leads, as on the wire.
type (
	anMessageStart struct {
		Type    string        `json:"type"`
		Message anMessageResp `json:"message"`
	}
	anBlockStart struct {
		Type         string    `json:"type"`
		Index        int       `json:"index"`
		ContentBlock anContent `json:"content_block"`
	}
	anBlockDelta struct {
		Type  string  `json:"type"`
		Index int     `json:"index"`
		Delta anDelta `json:"delta"`
	}
	anDelta struct {
		Type        string  `json:"type"`
		Text        *string `json:"text,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
	anBlockStop struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	anMessageDelta struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage anUsage `json:"usage"`
	}
	anBare struct {
		Type string `json:"type"`
	}
)

// anEvents renders msg, whose content is the final one, as the named SSE
// events of a streamed message.
func anEvents(msg anMessageResp, r reply) [][]byte {
	var events [][]byte
	emit := func(name string, v any) {
		events = append(events, fmt.Appendf(nil, "event: %s\ndata: %s\n\n", name, mustJSON(v)))
	}
	start := msg
	start.Content = []anContent{}
	start.Usage.OutputTokens = min(1, msg.Usage.OutputTokens)
	emit("message_start", anMessageStart{Type: "message_start", Message: start})
	for i, block := range msg.Content {
		opening := block
		if block.Type == "text" {
			empty := ""
			opening.Text = &empty
		} else {
			opening.Input = json.RawMessage("{}")
		}
		emit("content_block_start", anBlockStart{Type: "content_block_start", Index: i, ContentBlock: opening})
		if i == 0 {
			emit("ping", anBare{Type: "ping"})
		}
		delta := func(d anDelta) {
			emit("content_block_delta", anBlockDelta{Type: "content_block_delta", Index: i, Delta: d})
		}
		if block.Type == "text" {
			for _, piece := range pieces(*block.Text) {
				delta(anDelta{Type: "text_delta", Text: &piece})
			}
		} else {
			// The first fragment of a tool input is empty, as the API sends it.
			parts := append([]string{""}, halves(string(block.Input))...)
			for _, part := range parts {
				delta(anDelta{Type: "input_json_delta", PartialJSON: &part})
			}
		}
		emit("content_block_stop", anBlockStop{Type: "content_block_stop", Index: i})
	}
	if len(msg.Content) == 0 {
		emit("ping", anBare{Type: "ping"})
	}
	md := anMessageDelta{Type: "message_delta", Usage: msg.Usage}
	md.Delta.StopReason = r.finish.anthropic()
	md.Usage.ServiceTier = ""
	emit("message_delta", md)
	emit("message_stop", anBare{Type: "message_stop"})
	return events
}
