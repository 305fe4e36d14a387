package providersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// flavor selects between the three servers that speak OpenAI's protocol.
type flavor int

const (
	flavorOpenAI flavor = iota
	// flavorAzure serves deployment URLs with an api-version query, an
	// api-key header and content-filter annotations.
	flavorAzure
	// flavorCompatible behaves like vLLM and Mistral: usage on the finish
	// chunk, stream_options refused without stream, top-level errors.
	flavorCompatible
)

// openAI is the Chat Completions dialect (OpenAI section 1 and 5 of the
// wire-format reference).
type openAI struct{ flavor flavor }

var defaultOpenAIModels = []string{"gpt-4o-mini", "gpt-4o", "text-embedding-3-small"}

// modelCreated is a fixed timestamp for /v1/models entries.
const modelCreated = 1721172741

// The date OpenAI's response model names carry.
const openAISnapshot = "-2024-07-18"

var (
	datedModel        = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}$`)
	azureVersionShape = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}(-preview)?$`)
)

func (o openAI) routes(p *provider) {
	if o.flavor == flavorAzure {
		p.handle("POST /openai/deployments/{deployment}/chat/completions", azureVersioned(func(x *exchange) {
			o.chat(x, x.r.PathValue("deployment"))
		}))
		p.handle("POST /openai/deployments/{deployment}/embeddings", azureVersioned(func(x *exchange) {
			o.embeddings(x, x.r.PathValue("deployment"))
		}))
		p.handle("GET /openai/models", azureVersioned(o.listModels))
		return
	}
	p.handle("POST /v1/chat/completions", func(x *exchange) { o.chat(x, "") })
	if o.flavor == flavorOpenAI {
		// vLLM's Responses support is not the gateway's to rely on.
		p.handle("POST /v1/responses", o.responses)
	}
	p.handle("POST /v1/embeddings", func(x *exchange) { o.embeddings(x, "") })
	p.handle("GET /v1/models", o.listModels)
	p.handle("GET /v1/models/{model}", o.getModel)
}

// azureVersioned rejects requests without a usable api-version the way
// Azure does: a missing one is an unknown resource.
func azureVersioned(fn func(*exchange)) func(*exchange) {
	return func(x *exchange) {
		v := x.r.URL.Query().Get("api-version")
		switch {
		case v == "":
			x.fail(apiError{status: http.StatusNotFound, code: "404", message: "Resource not found"})
		case !azureVersionShape.MatchString(v):
			x.fail(apiError{status: http.StatusBadRequest, code: "BadRequest", message: "API version not supported"})
		default:
			fn(x)
		}
	}
}

func (o openAI) streaming(_ *http.Request, body []byte) bool { return streamFlag(body) }

func (o openAI) authorized(r *http.Request, key string) bool {
	if o.flavor == flavorAzure {
		return keyMatches(r.Header.Get("api-key"), key)
	}
	return keyMatches(r.Header.Get("Authorization"), "Bearer "+key)
}

func (o openAI) authError() apiError {
	if o.flavor == flavorAzure {
		return apiError{status: http.StatusUnauthorized, code: "401", message: "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}
	}
	return apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided."}
}

func (o openAI) headers(h http.Header, q quota) {
	h.Set("x-request-id", "req_"+q.requestID)
	if o.flavor == flavorAzure {
		h.Set("apim-request-id", q.requestID)
	}
	h.Set("x-ratelimit-limit-requests", strconv.Itoa(limitRequests))
	h.Set("x-ratelimit-limit-tokens", strconv.Itoa(limitTokens))
	h.Set("x-ratelimit-remaining-requests", strconv.FormatInt(q.remainingRequests(), 10))
	h.Set("x-ratelimit-remaining-tokens", strconv.FormatInt(q.remainingTokens(), 10))
	h.Set("x-ratelimit-reset-requests", "1s")
	h.Set("x-ratelimit-reset-tokens", "1s")
}

func (o openAI) statusError(status int, retryAfter time.Duration) apiError {
	e := apiError{status: status, typ: "invalid_request_error", message: http.StatusText(status)}
	switch {
	case status == http.StatusUnauthorized:
		return o.authError()
	case status == http.StatusForbidden:
		e.typ, e.code, e.message = "request_forbidden", "unsupported_country_region_territory", "Country, region, or territory not supported"
	case status == http.StatusNotFound:
		e.code, e.message = "model_not_found", "The model does not exist or you do not have access to it."
	case status == http.StatusTooManyRequests:
		e.typ, e.code, e.retryAfter = "requests", "rate_limit_exceeded", retryAfter
		e.message = fmt.Sprintf("Rate limit reached for requests. Please try again in %s.", retryAfter)
		if o.flavor == flavorAzure {
			e.typ, e.code = "", "429"
			e.message = fmt.Sprintf("Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after %s seconds.", retryAfterSeconds(retryAfter))
		}
	case status == http.StatusServiceUnavailable:
		e.typ, e.retryAfter = "server_error", retryAfter
		e.message = "The engine is currently overloaded, please try again later."
	case status >= 500:
		e.typ = "server_error"
		e.message = "The server had an error while processing your request. Sorry about that!"
	}
	return e
}

func (o openAI) writeError(w http.ResponseWriter, e apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("retry-after", retryAfterSeconds(e.retryAfter))
		if o.flavor == flavorAzure {
			w.Header().Set("retry-after-ms", strconv.FormatInt(e.retryAfter.Milliseconds(), 10))
		}
	}
	var body any
	if o.flavor == flavorCompatible {
		// vLLM's older and Mistral's error shape: top level, numeric code.
		body = struct {
			Object  string  `json:"object"`
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    int     `json:"code"`
		}{"error", e.message, orDefault(e.typ, "invalid_request_error"), nullable(e.param), e.status}
	} else if o.flavor == flavorAzure {
		// Azure's own errors carry only code and message; the ones it
		// relays from the model also carry type and param.
		body = map[string]any{"error": struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Type    string `json:"type,omitempty"`
			Param   string `json:"param,omitempty"`
		}{orDefault(e.code, strconv.Itoa(e.status)), e.message, e.typ, e.param}}
	} else {
		body = map[string]any{"error": oaErrorBody{Message: e.message, Type: nullable(e.typ), Param: nullable(e.param), Code: nullable(e.code)}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	w.Write(mustJSON(body))
}

type oaErrorBody struct {
	Message string  `json:"message"`
	Type    *string `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (o openAI) malformed(stream bool) (string, []byte) {
	if stream {
		return "text/event-stream", []byte("data: {\"id\":\"chatcmpl-malformed\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"Hel\n\ndata: [DONE]\n\n")
	}
	return "application/json", []byte(`{"id":"chatcmpl-malformed","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis`)
}

// Request shapes, read leniently: only what the rules need.
type oaChatRequest struct {
	Model               string          `json:"model"`
	Messages            []oaMessage     `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *oaStreamOpts   `json:"stream_options"`
	Tools               []oaTool        `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ResponseFormat      *oaFormat       `json:"response_format"`
}

// oaFormat is response_format: text, json_object, or json_schema with
// its schema.
type oaFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

type oaStreamOpts struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []oaToolCall    `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaToolCall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Function oaFunctionCall `json:"function"`
}

type oaFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func invalidRequest(param, code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, code: code, message: fmt.Sprintf(format, args...)}
}

func (o openAI) chat(x *exchange, deployment string) {
	var req oaChatRequest
	if err := json.Unmarshal(x.body, &req); err != nil {
		x.fail(*invalidRequest("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"))
		return
	}
	model := req.Model
	if o.flavor == flavorAzure {
		// Azure ignores the body's model: the deployment decides.
		model = deployment
	}
	conv, errp := o.conversation(req, model)
	if errp != nil {
		x.fail(*errp)
		return
	}
	if !x.p.knownModel(model) {
		x.fail(o.modelNotFound(model))
		return
	}
	r := x.answer(conv)
	x.p.served(r.promptTokens, r.completionTokens)
	env := o.envelope(x, model)
	if req.Stream {
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		x.writeStream("text/event-stream", o.chunks(env, r, includeUsage))
		return
	}
	x.writeJSON(http.StatusOK, o.completion(env, r))
}

func (o openAI) modelNotFound(model string) apiError {
	switch o.flavor {
	case flavorAzure:
		return apiError{status: http.StatusNotFound, code: "DeploymentNotFound", message: "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}
	case flavorCompatible:
		return apiError{status: http.StatusNotFound, typ: "NotFoundError", message: fmt.Sprintf("The model `%s` does not exist.", model)}
	}
	return apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found", message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)}
}

// conversation validates the request as OpenAI does and extracts what the
// reply rules need.
func (o openAI) conversation(req oaChatRequest, model string) (conversation, *apiError) {
	c := conversation{model: model, messages: len(req.Messages)}
	if model == "" {
		return c, invalidRequest("", "", "you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return c, invalidRequest("messages", "empty_array", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	if o.flavor == flavorCompatible && req.StreamOptions != nil && !req.Stream {
		e := &apiError{status: http.StatusBadRequest, typ: "BadRequestError", message: "Stream options can only be defined when `stream=True`."}
		return c, e
	}
	limit, param := req.MaxCompletionTokens, "max_completion_tokens"
	if limit == nil {
		limit, param = req.MaxTokens, "max_tokens"
	}
	if limit != nil {
		if *limit < 1 {
			return c, invalidRequest(param, "integer_below_min_value", "Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", param, *limit)
		}
		c.maxTokens, c.hasMax = *limit, true
	}
	if err := checkToolPairing(req.Messages); err != nil {
		return c, err
	}
	for i, m := range req.Messages {
		text, images, err := oaContent(m.Content, i)
		if err != nil {
			return c, err
		}
		c.textChars += chars(text)
		switch m.Role {
		case "user":
			c.lastUserText, c.images = text, images
			c.promptTurn(text)
		case "assistant":
			c.assistantCalls(len(m.ToolCalls))
		case "system", "developer", "tool", "function":
		default:
			return c, invalidRequest(fmt.Sprintf("messages.[%d].role", i), "invalid_value", "Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role)
		}
		// The reply answers the last user, assistant or tool message:
		// system and developer messages after it only instruct.
		if m.Role != "system" && m.Role != "developer" {
			c.lastIsUser, c.toolResult = m.Role == "user", nil
			if m.Role == "tool" {
				c.toolResult = &text
			}
		}
	}
	for _, t := range req.Tools {
		c.tools = append(c.tools, toolDef{name: t.Function.Name, schema: t.Function.Parameters})
	}
	choice, err := oaToolChoice(req.ToolChoice, c.tools)
	if err != nil {
		return c, err
	}
	c.choice = choice
	if c.format, err = oaReplyFormat(req.ResponseFormat); err != nil {
		return c, err
	}
	return c, nil
}

// oaReplyFormat reads response_format as OpenAI checks it.
func oaReplyFormat(f *oaFormat) (replyFormat, *apiError) {
	if f == nil {
		return replyFormat{}, nil
	}
	switch f.Type {
	case "text":
		return replyFormat{}, nil
	case "json_object":
		return replyFormat{json: true}, nil
	case "json_schema":
		if f.JSONSchema == nil {
			return replyFormat{}, invalidRequest("response_format.json_schema", "missing_required_parameter", "Missing required parameter: 'response_format.json_schema'.")
		}
		if f.JSONSchema.Name == "" {
			return replyFormat{}, invalidRequest("response_format.json_schema.name", "missing_required_parameter", "Missing required parameter: 'response_format.json_schema.name'.")
		}
		return replyFormat{json: true, schema: f.JSONSchema.Schema}, nil
	}
	return replyFormat{}, invalidRequest("response_format.type", "invalid_value", "Invalid value: '%s'. Supported values are: 'json_object', 'json_schema', and 'text'.", f.Type)
}

// checkToolPairing enforces OpenAI's rule that assistant tool calls are
// answered, each by id, by the tool messages right after them.
func checkToolPairing(msgs []oaMessage) *apiError {
	var pending []string
	for i, m := range msgs {
		if m.Role == "tool" {
			if m.ToolCallID == "" {
				return invalidRequest(fmt.Sprintf("messages.[%d].tool_call_id", i), "missing_required_parameter", "Missing required parameter: 'messages.[%d].tool_call_id'.", i)
			}
			j := indexOf(pending, m.ToolCallID)
			if j < 0 {
				return invalidRequest(fmt.Sprintf("messages.[%d].role", i), "", "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			pending = append(pending[:j], pending[j+1:]...)
			continue
		}
		if len(pending) > 0 {
			return unansweredToolCalls(i, pending)
		}
		if m.Role == "assistant" {
			for _, tc := range m.ToolCalls {
				pending = append(pending, tc.ID)
			}
		}
	}
	if len(pending) > 0 {
		return unansweredToolCalls(len(msgs)-1, pending)
	}
	return nil
}

func unansweredToolCalls(i int, ids []string) *apiError {
	return invalidRequest(fmt.Sprintf("messages.[%d].role", i), "", "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(ids, ", "))
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

// oaContent reads a message's content: a string, null or an array of parts.
func oaContent(raw json.RawMessage, i int) (text string, images int, _ *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", 0, nil
	}
	text, images, ok := partsText(raw, "image_url", "text")
	if !ok {
		return "", 0, invalidRequest(fmt.Sprintf("messages.[%d].content", i), "invalid_type", "Invalid type for 'messages.[%d].content': expected one of a string or array of objects.", i)
	}
	return text, images, nil
}

// partsText reads an OpenAI content value, chat's or the Responses API's:
// a string, or an array of parts whose text parts (of textTypes) are
// joined and whose image parts (of imageType) are counted; ok is false
// for anything else.
func partsText(raw json.RawMessage, imageType string, textTypes ...string) (text string, images int, ok bool) {
	if json.Unmarshal(raw, &text) == nil {
		return text, 0, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", 0, false
	}
	var texts []string
	for _, p := range parts {
		switch {
		case slices.Contains(textTypes, p.Type):
			texts = append(texts, p.Text)
		case p.Type == imageType:
			images++
		}
	}
	return strings.Join(texts, " "), images, true
}

func oaToolChoice(raw json.RawMessage, tools []toolDef) (toolChoice, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return toolChoice{mode: choiceAuto}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		mode := map[string]choiceMode{"none": choiceNone, "auto": choiceAuto, "required": choiceRequired}
		m, ok := mode[s]
		if !ok {
			return toolChoice{}, invalidRequest("tool_choice", "invalid_value", "Invalid value: '%s'. Supported values are: 'none', 'auto', and 'required'.", s)
		}
		if m != choiceNone && len(tools) == 0 {
			return toolChoice{}, invalidRequest("tool_choice", "", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
		}
		return toolChoice{mode: m}, nil
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Type != "function" {
		// allowed_tools and custom choices: let the model pick.
		return toolChoice{mode: choiceAuto}, nil
	}
	for _, t := range tools {
		if t.name == obj.Function.Name {
			return toolChoice{mode: choiceForced, name: t.name}, nil
		}
	}
	return toolChoice{}, invalidRequest("tool_choice", "", "Invalid value for 'tool_choice': tool '%s' was not found in 'tools'.", obj.Function.Name)
}

// oaEnvelope is what every completion and chunk of one response shares.
type oaEnvelope struct {
	id      string
	created int64
	model   string
	seq     int
}

func (o openAI) envelope(x *exchange, model string) oaEnvelope {
	seq := x.p.nextSeq()
	if o.flavor != flavorCompatible && !datedModel.MatchString(model) {
		model += openAISnapshot
	}
	return oaEnvelope{id: fmt.Sprintf("chatcmpl-sim%06d", seq), created: x.now().Unix(), model: model, seq: seq}
}

func (o openAI) toolCallID(seq int) string {
	if o.flavor == flavorCompatible {
		// Mistral only accepts ids of exactly nine alphanumerics.
		return fmt.Sprintf("sim%06d", seq%1_000_000)
	}
	return fmt.Sprintf("call_sim%06d", seq)
}

func (f finish) openAI() string {
	switch f {
	case finishLength:
		return "length"
	case finishToolCall:
		return "tool_calls"
	}
	return "stop"
}

type oaCompletion struct {
	ID                  string           `json:"id"`
	Object              string           `json:"object"`
	Created             int64            `json:"created"`
	Model               string           `json:"model"`
	Choices             []oaChoice       `json:"choices"`
	Usage               oaUsage          `json:"usage"`
	SystemFingerprint   string           `json:"system_fingerprint,omitempty"`
	ServiceTier         string           `json:"service_tier,omitempty"`
	PromptFilterResults []azPromptFilter `json:"prompt_filter_results,omitempty"`
}

type oaChoice struct {
	Index                int           `json:"index"`
	Message              oaRespMessage `json:"message"`
	Logprobs             *struct{}     `json:"logprobs"`
	FinishReason         string        `json:"finish_reason"`
	ContentFilterResults *azFilters    `json:"content_filter_results,omitempty"`
}

type oaRespMessage struct {
	Role      string       `json:"role"`
	Content   *string      `json:"content"`
	Refusal   *string      `json:"refusal"`
	ToolCalls []oaToolCall `json:"tool_calls,omitempty"`
}

type oaUsage struct {
	PromptTokens            int                  `json:"prompt_tokens"`
	CompletionTokens        int                  `json:"completion_tokens"`
	TotalTokens             int                  `json:"total_tokens"`
	PromptTokensDetails     *oaPromptDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *oaCompletionDetails `json:"completion_tokens_details,omitempty"`
}

type oaPromptDetails struct {
	CachedTokens int `json:"cached_tokens"`
	AudioTokens  int `json:"audio_tokens"`
}

type oaCompletionDetails struct {
	ReasoningTokens          int `json:"reasoning_tokens"`
	AudioTokens              int `json:"audio_tokens"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

// Azure's content-filter annotations.
type azPromptFilter struct {
	PromptIndex          int       `json:"prompt_index"`
	ContentFilterResults azFilters `json:"content_filter_results"`
}

type azFilters struct {
	Hate     *azSeverity `json:"hate,omitempty"`
	SelfHarm *azSeverity `json:"self_harm,omitempty"`
	Sexual   *azSeverity `json:"sexual,omitempty"`
	Violence *azSeverity `json:"violence,omitempty"`
}

type azSeverity struct {
	Filtered bool   `json:"filtered"`
	Severity string `json:"severity"`
}

func safeFilters() *azFilters {
	safe := &azSeverity{Severity: "safe"}
	return &azFilters{Hate: safe, SelfHarm: safe, Sexual: safe, Violence: safe}
}

func (o openAI) usage(r reply) oaUsage {
	u := oaUsage{PromptTokens: r.promptTokens, CompletionTokens: r.completionTokens, TotalTokens: r.promptTokens + r.completionTokens}
	if o.flavor != flavorCompatible {
		u.PromptTokensDetails = &oaPromptDetails{}
		u.CompletionTokensDetails = &oaCompletionDetails{}
	}
	return u
}

func (o openAI) completion(env oaEnvelope, r reply) oaCompletion {
	msg := oaRespMessage{Role: "assistant"}
	if r.call != nil {
		msg.ToolCalls = []oaToolCall{{ID: o.toolCallID(env.seq), Type: "function", Function: oaFunctionCall{Name: r.call.name, Arguments: string(r.call.args)}}}
	} else {
		msg.Content = &r.text
	}
	c := oaCompletion{
		ID: env.id, Object: "chat.completion", Created: env.created, Model: env.model,
		Choices: []oaChoice{{Message: msg, FinishReason: r.finish.openAI()}},
		Usage:   o.usage(r),
	}
	switch o.flavor {
	case flavorOpenAI:
		c.SystemFingerprint, c.ServiceTier = "fp_sim", "default"
	case flavorAzure:
		c.SystemFingerprint = "fp_sim"
		c.PromptFilterResults = []azPromptFilter{{ContentFilterResults: *safeFilters()}}
		c.Choices[0].ContentFilterResults = safeFilters()
	}
	return c
}

type oaChunk struct {
	ID                  string           `json:"id"`
	Object              string           `json:"object"`
	Created             int64            `json:"created"`
	Model               string           `json:"model"`
	SystemFingerprint   string           `json:"system_fingerprint,omitempty"`
	Choices             []oaChunkChoice  `json:"choices"`
	Usage               json.RawMessage  `json:"usage,omitempty"`
	PromptFilterResults []azPromptFilter `json:"prompt_filter_results,omitempty"`
}

type oaChunkChoice struct {
	Index                int        `json:"index"`
	Delta                oaDelta    `json:"delta"`
	Logprobs             *struct{}  `json:"logprobs"`
	FinishReason         *string    `json:"finish_reason"`
	ContentFilterResults *azFilters `json:"content_filter_results,omitempty"`
}

type oaDelta struct {
	Role      string            `json:"role,omitempty"`
	Content   *string           `json:"content,omitempty"`
	ToolCalls []oaToolCallDelta `json:"tool_calls,omitempty"`
}

type oaToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function oaFunctionPartial `json:"function"`
}

type oaFunctionPartial struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// chunks renders a reply as the SSE events of a streamed completion,
// [DONE] included.
func (o openAI) chunks(env oaEnvelope, r reply, includeUsage bool) [][]byte {
	var events [][]byte
	if o.flavor == flavorAzure {
		// Azure's first chunk carries only the prompt filter verdict.
		events = append(events, sseData(mustJSON(oaChunk{
			Choices:             []oaChunkChoice{},
			PromptFilterResults: []azPromptFilter{{ContentFilterResults: *safeFilters()}},
		})))
	}
	var usageNull json.RawMessage
	if includeUsage && o.flavor != flavorCompatible {
		usageNull = json.RawMessage("null")
	}
	emit := func(delta oaDelta, finish *string, filters *azFilters) {
		ch := oaChunk{
			ID: env.id, Object: "chat.completion.chunk", Created: env.created, Model: env.model,
			Choices: []oaChunkChoice{{Delta: delta, FinishReason: finish}},
			Usage:   usageNull,
		}
		if o.flavor != flavorCompatible {
			ch.SystemFingerprint = "fp_sim"
		}
		if o.flavor == flavorAzure {
			ch.Choices[0].ContentFilterResults = filters
		}
		if finish != nil && includeUsage && o.flavor == flavorCompatible {
			ch.Usage = mustJSON(o.usage(r))
		}
		events = append(events, sseData(mustJSON(ch)))
	}
	if r.call != nil {
		first := oaToolCallDelta{ID: o.toolCallID(env.seq), Type: "function", Function: oaFunctionPartial{Name: r.call.name}}
		emit(oaDelta{Role: "assistant", ToolCalls: []oaToolCallDelta{first}}, nil, &azFilters{})
		for _, part := range halves(string(r.call.args)) {
			emit(oaDelta{ToolCalls: []oaToolCallDelta{{Function: oaFunctionPartial{Arguments: part}}}}, nil, safeFilters())
		}
	} else {
		empty := ""
		emit(oaDelta{Role: "assistant", Content: &empty}, nil, &azFilters{})
		for _, piece := range pieces(r.text) {
			emit(oaDelta{Content: &piece}, nil, safeFilters())
		}
	}
	reason := r.finish.openAI()
	emit(oaDelta{}, &reason, &azFilters{})
	if includeUsage && o.flavor != flavorCompatible {
		events = append(events, sseData(mustJSON(oaChunk{
			ID: env.id, Object: "chat.completion.chunk", Created: env.created, Model: env.model,
			Choices: []oaChunkChoice{}, Usage: mustJSON(o.usage(r)),
		})))
	}
	return append(events, sseData([]byte("[DONE]")))
}

type oaEmbeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

type embeddingInput struct {
	text   string
	tokens int
}

// oaEmbeddingInputs reads input: a string, strings, token ids or lists of
// token ids. Token inputs embed their JSON text.
func oaEmbeddingInputs(raw json.RawMessage) ([]embeddingInput, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []embeddingInput{{text: s, tokens: textTokens(s)}}, s != ""
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		out := make([]embeddingInput, len(ss))
		for i, s := range ss {
			if s == "" {
				return nil, false
			}
			out[i] = embeddingInput{text: s, tokens: textTokens(s)}
		}
		return out, len(out) > 0
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return []embeddingInput{{text: string(raw), tokens: len(ids)}}, len(ids) > 0
	}
	var lists [][]int
	if json.Unmarshal(raw, &lists) == nil {
		out := make([]embeddingInput, len(lists))
		for i, l := range lists {
			if len(l) == 0 {
				return nil, false
			}
			out[i] = embeddingInput{text: string(mustJSON(l)), tokens: len(l)}
		}
		return out, len(out) > 0
	}
	return nil, false
}

func (o openAI) embeddings(x *exchange, deployment string) {
	var req oaEmbeddingRequest
	if err := json.Unmarshal(x.body, &req); err != nil {
		x.fail(*invalidRequest("", "", "We could not parse the JSON body of your request."))
		return
	}
	model := req.Model
	if o.flavor == flavorAzure {
		model = deployment
	}
	if model == "" {
		x.fail(*invalidRequest("", "", "you must provide a model parameter"))
		return
	}
	inputs, ok := oaEmbeddingInputs(req.Input)
	if !ok {
		x.fail(*invalidRequest("input", "", "'$.input' is invalid."))
		return
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		x.fail(*invalidRequest("encoding_format", "invalid_value", "Invalid value for 'encoding_format' = %s. Supported values are: 'float' and 'base64'.", req.EncodingFormat))
		return
	}
	if req.Dimensions < 0 || req.Dimensions > maxEmbeddingDims {
		x.fail(*invalidRequest("dimensions", "invalid_value", "Invalid 'dimensions': must be between 1 and %d, got %d.", maxEmbeddingDims, req.Dimensions))
		return
	}
	if !x.p.knownModel(model) {
		x.fail(o.modelNotFound(model))
		return
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(inputs))
	tokens := 0
	for i, in := range inputs {
		v := embed(in.text, req.Dimensions)
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			data[i].Embedding = base64Floats(v)
		}
		tokens += in.tokens
	}
	x.p.served(tokens, 0)
	x.writeJSON(http.StatusOK, struct {
		Object string         `json:"object"`
		Data   []item         `json:"data"`
		Model  string         `json:"model"`
		Usage  map[string]int `json:"usage"`
	}{"list", data, model, map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
}

type oaModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (o openAI) models(p *provider) []oaModel {
	names := p.cfg.Models
	if len(names) == 0 {
		names = defaultOpenAIModels
	}
	out := make([]oaModel, len(names))
	for i, n := range names {
		out[i] = oaModel{ID: n, Object: "model", Created: modelCreated, OwnedBy: "system"}
	}
	return out
}

func (o openAI) listModels(x *exchange) {
	x.writeJSON(http.StatusOK, map[string]any{"object": "list", "data": o.models(x.p)})
}

func (o openAI) getModel(x *exchange) {
	name := x.r.PathValue("model")
	for _, m := range o.models(x.p) {
		if m.ID == name {
			x.writeJSON(http.StatusOK, m)
			return
		}
	}
	x.fail(o.modelNotFound(name))
}
