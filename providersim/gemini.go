package providersim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// gemini is the generateContent dialect (section 4 of the wire-format
// reference).
type gemini struct{}

func (g gemini) routes(p *provider) {
	// The method is glued to the model with a colon, which ServeMux cannot
	// split, so one pattern takes both.
	p.handle("GET /v1beta/models", g.listModels)
	p.handle("POST /v1beta/models/{call}", func(x *exchange) {
		model, method, _ := strings.Cut(x.r.PathValue("call"), ":")
		switch method {
		case "generateContent":
			g.generate(x, model, false)
		case "streamGenerateContent":
			g.generate(x, model, true)
		case "embedContent":
			g.embed(x, model, false)
		case "batchEmbedContents":
			g.embed(x, model, true)
		case "countTokens":
			g.countTokens(x, model)
		default:
			e := g.statusError(http.StatusNotFound, 0)
			e.message = fmt.Sprintf("Method %q is not supported by the simulator.", method)
			x.fail(e)
		}
	})
}

func (gemini) streaming(r *http.Request, _ []byte) bool {
	return strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
}

func (gemini) authorized(r *http.Request, key string) bool {
	got := r.Header.Get("x-goog-api-key")
	if got == "" {
		got = r.URL.Query().Get("key")
	}
	return keyMatches(got, key)
}

func (gemini) authError() apiError {
	return apiError{status: http.StatusBadRequest, typ: "INVALID_ARGUMENT", code: "API_KEY_INVALID", message: "API key not valid. Please pass a valid API key."}
}

// headers sets nothing: the Gemini API documents no request-id or
// rate-limit response headers.
func (gemini) headers(http.Header, quota) {}

func (gemini) statusError(status int, retryAfter time.Duration) apiError {
	e := apiError{status: status}
	switch status {
	case http.StatusBadRequest:
		e.typ, e.message = "INVALID_ARGUMENT", "Request contains an invalid argument."
	case http.StatusUnauthorized:
		e.typ, e.message = "UNAUTHENTICATED", "Request had invalid authentication credentials."
	case http.StatusForbidden:
		e.typ, e.message = "PERMISSION_DENIED", "The caller does not have permission"
	case http.StatusNotFound:
		e.typ, e.message = "NOT_FOUND", "Requested entity was not found."
	case http.StatusTooManyRequests:
		e.typ, e.retryAfter = "RESOURCE_EXHAUSTED", retryAfter
		e.message = "You exceeded your current quota, please check your plan and billing details."
	case 499:
		e.typ, e.message = "CANCELLED", "The operation was cancelled."
	case http.StatusServiceUnavailable:
		e.typ, e.message = "UNAVAILABLE", "The model is overloaded. Please try again later."
	case http.StatusGatewayTimeout:
		e.typ, e.message = "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."
	default:
		e.typ, e.message = "UNKNOWN", http.StatusText(status)
		if status >= 500 {
			e.typ, e.message = "INTERNAL", "An internal error has occurred."
		}
	}
	return e
}

// writeError writes Google's error envelope. The back-off travels only as
// a RetryInfo detail: Gemini sends no retry-after header.
func (gemini) writeError(w http.ResponseWriter, e apiError) {
	details := []map[string]any{}
	if e.code != "" {
		details = append(details, map[string]any{
			"@type":    "type.googleapis.com/google.rpc.ErrorInfo",
			"reason":   e.code,
			"domain":   "googleapis.com",
			"metadata": map[string]string{"service": "generativelanguage.googleapis.com"},
		})
	}
	if e.status == http.StatusTooManyRequests {
		details = append(details, map[string]any{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []map[string]string{{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
				"quotaId":     "GenerateRequestsPerMinutePerProjectPerModel",
			}},
		})
	}
	if e.retryAfter > 0 {
		details = append(details, map[string]any{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": strconv.FormatFloat(e.retryAfter.Seconds(), 'f', -1, 64) + "s",
		})
	}
	body := map[string]any{"error": map[string]any{"code": e.status, "message": e.message, "status": e.typ}}
	if len(details) > 0 {
		body["error"].(map[string]any)["details"] = details
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.status)
	w.Write(mustJSON(body))
}

func (gemini) malformed(stream bool) (string, []byte) {
	if stream {
		return "text/event-stream", []byte("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hel\n\n")
	}
	return "text/html; charset=UTF-8", []byte("<!DOCTYPE html><html><head><title>Error 502 (Server Error)!!1</title></head><body><p>The server encountered a temporary error.</p></body></html>")
}

type gmRequest struct {
	Contents          []gmContent `json:"contents"`
	SystemInstruction *gmContent  `json:"systemInstruction"`
	Tools             []gmTool    `json:"tools"`
	ToolConfig        *struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
	GenerationConfig *struct {
		MaxOutputTokens    int             `json:"maxOutputTokens"`
		Temperature        *float64        `json:"temperature"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

type gmContent struct {
	Role  string   `json:"role,omitempty"`
	Parts []gmPart `json:"parts"`
}

type gmPart struct {
	Text             *string             `json:"text,omitempty"`
	InlineData       *gmMedia            `json:"inlineData,omitempty"`
	FileData         *gmMedia            `json:"fileData,omitempty"`
	FunctionCall     *gmFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *gmFunctionResponse `json:"functionResponse,omitempty"`
}

type gmMedia struct {
	MimeType string `json:"mimeType"`
}

type gmFunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type gmFunctionResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type gmTool struct {
	FunctionDeclarations []struct {
		Name                 string          `json:"name"`
		Parameters           json.RawMessage `json:"parameters"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
	} `json:"functionDeclarations"`
}

func gmInvalid(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "INVALID_ARGUMENT", message: fmt.Sprintf(format, args...)}
}

func isObject(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && obj != nil
}

func (g gemini) generate(x *exchange, model string, stream bool) {
	var req gmRequest
	if err := json.Unmarshal(x.body, &req); err != nil {
		x.fail(*gmInvalid("Invalid JSON payload received. %v", err))
		return
	}
	conv, errp := gmConversation(req, model)
	if errp != nil {
		x.fail(*errp)
		return
	}
	if !x.p.knownModel(model) {
		x.fail(apiError{status: http.StatusNotFound, typ: "NOT_FOUND", message: fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", model)})
		return
	}
	r := x.answer(conv)
	x.p.served(r.promptTokens, r.completionTokens)
	env := gmResponse{ModelVersion: model, ResponseID: fmt.Sprintf("sim%06d", x.p.nextSeq())}
	if !stream {
		resp := env
		resp.Candidates = []gmCandidate{{Content: gmReplyContent(r), FinishReason: r.finish.gemini()}}
		resp.UsageMetadata = gmUsageFor(r.promptTokens, r.completionTokens)
		x.writeJSON(http.StatusOK, resp)
		return
	}
	chunks := gmChunks(env, r)
	if x.r.URL.Query().Get("alt") == "sse" {
		events := make([][]byte, len(chunks))
		for i, c := range chunks {
			events[i] = sseData(c)
		}
		x.writeStream("text/event-stream", events)
		return
	}
	// Without alt=sse the API streams one JSON array, element by element.
	events := make([][]byte, len(chunks))
	for i, c := range chunks {
		sep := ",\r\n"
		if i == 0 {
			sep = "["
		}
		events[i] = append([]byte(sep), c...)
	}
	events[len(events)-1] = append(events[len(events)-1], ']')
	x.writeStream("application/json", events)
}

// gmConversation validates the request as the API does and extracts what
// the reply rules need.
// countTokens answers models.countTokens: contents alone, or a whole
// generateContentRequest (which names its model), never both, counted with
// the simulator's tokenizer.
func (g gemini) countTokens(x *exchange, model string) {
	var body struct {
		Contents               []gmContent `json:"contents"`
		GenerateContentRequest *struct {
			Model string `json:"model"`
			gmRequest
		} `json:"generateContentRequest"`
	}
	if err := json.Unmarshal(x.body, &body); err != nil {
		x.fail(*gmInvalid("Invalid JSON payload received. %v", err))
		return
	}
	req := gmRequest{Contents: body.Contents}
	if gr := body.GenerateContentRequest; gr != nil {
		switch {
		case len(body.Contents) > 0:
			x.fail(*gmInvalid("contents and generateContentRequest are mutually exclusive; send one"))
			return
		case gr.Model != "models/"+model:
			x.fail(*gmInvalid("* CountTokensRequest.generate_content_request.model: %q must name the model of the path, models/%s\n", gr.Model, model))
			return
		}
		req = gr.gmRequest
	}
	conv, errp := gmConversation(req, model)
	if errp != nil {
		x.fail(*errp)
		return
	}
	if !x.p.knownModel(model) {
		x.fail(apiError{status: http.StatusNotFound, typ: "NOT_FOUND", message: fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for countTokens.", model)})
		return
	}
	n := respond(conv).promptTokens
	x.writeJSON(http.StatusOK, map[string]any{"totalTokens": n, "promptTokensDetails": []map[string]any{{"modality": "TEXT", "tokenCount": n}}})
}

func gmConversation(req gmRequest, model string) (conversation, *apiError) {
	c := conversation{model: model, messages: len(req.Contents), choice: toolChoice{mode: choiceAuto}}
	if len(req.Contents) == 0 {
		return c, gmInvalid("* GenerateContentRequest.contents: contents is not specified\n")
	}
	if gc := req.GenerationConfig; gc != nil {
		if gc.Temperature != nil && (*gc.Temperature < 0 || *gc.Temperature > 2) {
			return c, gmInvalid("* GenerateContentRequest.generation_config.temperature: must be in the range [0.0, 2.0]\n")
		}
		if gc.MaxOutputTokens > 0 {
			c.maxTokens, c.hasMax = gc.MaxOutputTokens, true
		}
		if gc.ResponseMimeType == "application/json" {
			c.format = replyFormat{json: true, schema: gc.ResponseSchema}
			if len(gc.ResponseJSONSchema) > 0 {
				c.format.schema = gc.ResponseJSONSchema
			}
		}
	}
	if si := req.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			if p.Text != nil {
				c.textChars += chars(*p.Text)
			}
		}
		c.messages++
	}
	for i, content := range req.Contents {
		if content.Role != "" && content.Role != "user" && content.Role != "model" {
			return c, gmInvalid("Please use a valid role: user, model.")
		}
		if len(content.Parts) == 0 {
			return c, gmInvalid("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.\n", i)
		}
		var texts []string
		images, calls := 0, 0
		var result *string
		for j, p := range content.Parts {
			if err := gmCheckPart(p, i, j); err != nil {
				return c, err
			}
			switch {
			case p.Text != nil:
				texts = append(texts, *p.Text)
				c.textChars += chars(*p.Text)
			case p.InlineData != nil && strings.HasPrefix(p.InlineData.MimeType, "image/"),
				p.FileData != nil && strings.HasPrefix(p.FileData.MimeType, "image/"):
				images++
			case p.FunctionResponse != nil:
				t := gmResultText(p.FunctionResponse.Response)
				c.textChars += chars(t)
				if result == nil {
					result = &t
				}
			case p.FunctionCall != nil:
				calls++
			}
		}
		user := content.Role != "model"
		if user {
			c.lastUserText, c.images = strings.Join(texts, " "), images
			if result == nil {
				c.promptTurn(c.lastUserText)
			}
		} else {
			c.assistantCalls(calls)
		}
		if i == len(req.Contents)-1 {
			c.toolResult = result
			c.lastIsUser = user && result == nil
		}
	}
	if err := gmCheckDeclarations(req.Tools); err != nil {
		return c, err
	}
	for _, t := range req.Tools {
		for _, fd := range t.FunctionDeclarations {
			schema := fd.Parameters
			if len(schema) == 0 {
				schema = fd.ParametersJSONSchema
			}
			c.tools = append(c.tools, toolDef{name: fd.Name, schema: schema})
		}
	}
	if req.ToolConfig != nil && req.ToolConfig.FunctionCallingConfig != nil {
		fc := req.ToolConfig.FunctionCallingConfig
		switch fc.Mode {
		case "NONE":
			c.choice.mode = choiceNone
		case "ANY":
			c.choice.mode = choiceRequired
			if len(fc.AllowedFunctionNames) > 0 {
				c.choice = toolChoice{mode: choiceForced, name: fc.AllowedFunctionNames[0]}
			}
		case "", "AUTO", "VALIDATED", "MODE_UNSPECIFIED":
		default:
			return c, gmInvalid("Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), %q", fc.Mode)
		}
		if len(fc.AllowedFunctionNames) > 0 && fc.Mode != "ANY" {
			return c, gmInvalid("* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: allowed_function_names can only be set when mode is ANY.\n")
		}
	}
	return c, nil
}

func gmCheckPart(p gmPart, i, j int) *apiError {
	at := fmt.Sprintf("contents[%d].parts[%d]", i, j)
	switch {
	case p.FunctionResponse != nil:
		if p.FunctionResponse.Name == "" {
			return gmInvalid("* GenerateContentRequest.%s.function_response.name: Name cannot be empty.\n", at)
		}
		if !isObject(p.FunctionResponse.Response) {
			return gmInvalid("Invalid value at '%s.function_response.response' (type.googleapis.com/google.protobuf.Struct), %s", at, orDefault(string(p.FunctionResponse.Response), "missing"))
		}
	case p.FunctionCall != nil:
		if p.FunctionCall.Name == "" {
			return gmInvalid("* GenerateContentRequest.%s.function_call.name: Name cannot be empty.\n", at)
		}
		if len(p.FunctionCall.Args) > 0 && !isObject(p.FunctionCall.Args) {
			return gmInvalid("Invalid value at '%s.function_call.args' (type.googleapis.com/google.protobuf.Struct), %s", at, p.FunctionCall.Args)
		}
	case p.Text == nil && p.InlineData == nil && p.FileData == nil:
		return gmInvalid("* GenerateContentRequest.%s.data: required oneof field 'data' must have one initialized field\n", at)
	}
	return nil
}

// gmResultText is what a functionResponse says: its "output" (Google's
// convention) or "content" (LiteLLM's), else the whole object.
func gmResultText(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(raw, &obj) // validated as an object already
	for _, key := range []string{"output", "content"} {
		if v, ok := obj[key]; ok {
			var s string
			if json.Unmarshal(v, &s) == nil {
				return s
			}
			return string(v)
		}
	}
	return string(raw)
}

func (f finish) gemini() string {
	if f == finishLength {
		return "MAX_TOKENS"
	}
	// Function calls finish with STOP too.
	return "STOP"
}

type gmResponse struct {
	Candidates    []gmCandidate `json:"candidates"`
	UsageMetadata gmUsage       `json:"usageMetadata"`
	ModelVersion  string        `json:"modelVersion"`
	ResponseID    string        `json:"responseId"`
}

type gmCandidate struct {
	Content      gmContent `json:"content"`
	FinishReason string    `json:"finishReason,omitempty"`
	Index        int       `json:"index"`
}

type gmUsage struct {
	PromptTokenCount     int                `json:"promptTokenCount"`
	CandidatesTokenCount int                `json:"candidatesTokenCount"`
	TotalTokenCount      int                `json:"totalTokenCount"`
	PromptTokensDetails  []gmModalityTokens `json:"promptTokensDetails"`
}

type gmModalityTokens struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

func gmUsageFor(prompt, candidates int) gmUsage {
	return gmUsage{
		PromptTokenCount: prompt, CandidatesTokenCount: candidates, TotalTokenCount: prompt + candidates,
		PromptTokensDetails: []gmModalityTokens{{Modality: "TEXT", TokenCount: prompt}},
	}
}

func gmReplyContent(r reply) gmContent {
	if r.call != nil {
		return gmContent{Role: "model", Parts: []gmPart{{FunctionCall: &gmFunctionCall{Name: r.call.name, Args: r.call.args}}}}
	}
	return gmContent{Role: "model", Parts: []gmPart{{Text: &r.text}}}
}

// gmChunks renders a reply as streamed responses: a text fragment per
// word with running usage totals, or the whole function call at once; the
// last chunk carries the finish reason.
func gmChunks(env gmResponse, r reply) [][]byte {
	if r.call != nil {
		c := env
		c.Candidates = []gmCandidate{{Content: gmReplyContent(r), FinishReason: r.finish.gemini()}}
		c.UsageMetadata = gmUsageFor(r.promptTokens, r.completionTokens)
		return [][]byte{mustJSON(c)}
	}
	ps := pieces(r.text)
	if len(ps) == 0 {
		ps = []string{""}
	}
	out := make([][]byte, len(ps))
	for i, piece := range ps {
		c := env
		cand := gmCandidate{Content: gmContent{Role: "model", Parts: []gmPart{{Text: &piece}}}}
		used := i + 1
		if i == len(ps)-1 {
			cand.FinishReason = r.finish.gemini()
			used = r.completionTokens
		}
		c.Candidates = []gmCandidate{cand}
		c.UsageMetadata = gmUsageFor(r.promptTokens, used)
		out[i] = mustJSON(c)
	}
	return out
}

func (g gemini) embed(x *exchange, model string, batch bool) {
	type embedRequest struct {
		Model                string    `json:"model"`
		Content              gmContent `json:"content"`
		OutputDimensionality int       `json:"outputDimensionality"`
	}
	var reqs []embedRequest
	if batch {
		var b struct {
			Requests []embedRequest `json:"requests"`
		}
		if err := json.Unmarshal(x.body, &b); err != nil {
			x.fail(*gmInvalid("Invalid JSON payload received. %v", err))
			return
		}
		if len(b.Requests) == 0 {
			x.fail(*gmInvalid("* BatchEmbedContentsRequest.requests: requests is not specified\n"))
			return
		}
		reqs = b.Requests
	} else {
		var one embedRequest
		if err := json.Unmarshal(x.body, &one); err != nil {
			x.fail(*gmInvalid("Invalid JSON payload received. %v", err))
			return
		}
		reqs = []embedRequest{one}
	}
	if !x.p.knownModel(model) {
		x.fail(apiError{status: http.StatusNotFound, typ: "NOT_FOUND", message: fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for embedContent.", model)})
		return
	}
	type values struct {
		Values []float32 `json:"values"`
	}
	out := make([]values, len(reqs))
	tokens := 0
	for i, r := range reqs {
		if r.OutputDimensionality < 0 || r.OutputDimensionality > maxEmbeddingDims {
			x.fail(*gmInvalid("* EmbedContentRequest.output_dimensionality: must be between 1 and %d.\n", maxEmbeddingDims))
			return
		}
		if r.Model != "" && r.Model != "models/"+model {
			x.fail(*gmInvalid("* BatchEmbedContentsRequest.requests[%d].model: the model in the request, %s, does not match the model in the URL, models/%s.\n", i, r.Model, model))
			return
		}
		var texts []string
		for _, p := range r.Content.Parts {
			if p.Text != nil {
				texts = append(texts, *p.Text)
			}
		}
		if len(texts) == 0 {
			x.fail(*gmInvalid("* EmbedContentRequest.content: content is not specified\n"))
			return
		}
		text := strings.Join(texts, " ")
		out[i] = values{Values: embed(text, r.OutputDimensionality)}
		tokens += textTokens(text)
	}
	x.p.served(tokens, 0)
	if batch {
		x.writeJSON(http.StatusOK, map[string]any{"embeddings": out})
		return
	}
	x.writeJSON(http.StatusOK, map[string]any{"embedding": out[0]})
}

// defaultGeminiModels are listed when the config names none.
var defaultGeminiModels = []string{"gemini-2.0-flash", "gemini-2.5-flash", "gemini-embedding-001"}

// listModels is models.list, paged by pageSize (default 50).
func (gemini) listModels(x *exchange) {
	names := x.p.cfg.Models
	if len(names) == 0 {
		names = defaultGeminiModels
	}
	size := len(names)
	if v := x.r.URL.Query().Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			x.fail(*gmInvalid("Invalid value at 'page_size' (TYPE_INT32), %q", v))
			return
		}
		if n > 0 {
			size = min(n, len(names))
		}
	}
	type model struct {
		Name        string `json:"name"`
		DisplayName string `json:"displayName"`
	}
	data := make([]model, size)
	for i, n := range names[:size] {
		data[i] = model{Name: "models/" + n, DisplayName: n}
	}
	out := map[string]any{"models": data}
	if size < len(names) {
		out["nextPageToken"] = strconv.Itoa(size)
	}
	x.writeJSON(http.StatusOK, out)
}
