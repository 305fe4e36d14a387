package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// maxStopSequences is Gemini's cap on stopSequences.
const maxStopSequences = 5

// functionNameRE is Gemini's rule for function names: stricter than
// OpenAI's at the start (a letter or '_'), looser inside.
var functionNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$`)

// refuse builds the 400 for a request Gemini cannot honour.
func refuse(param, format string, args ...any) *openaiapi.Error {
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_value", format, args...).WithParam(param)
}

// Request implements [translator.Translator.Request].
func (tr *Translator) Request(req *openaiapi.ChatRequest, raw []byte) (translator.Upstream, *openaiapi.Error) {
	if e := refuseUnmodelled(raw); e != nil {
		return translator.Upstream{}, e
	}
	g, e := tr.generateRequest(req)
	if e != nil {
		return translator.Upstream{}, e
	}
	body, err := json.Marshal(g)
	if err != nil {
		return translator.Upstream{}, openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_value", "the request cannot be encoded for the provider")
	}
	tr.includeUsage = req.IncludeUsage()
	tr.oneCall = req.ParallelToolCalls != nil && !*req.ParallelToolCalls
	method := ":generateContent"
	if req.Stream {
		method = ":streamGenerateContent?alt=sse"
	}
	return tr.upstream(method, body), nil
}

// upstream addresses a model method. The key travels in a header, never in
// the ?key= query, which ends up in access logs.
func (tr *Translator) upstream(method string, body []byte) translator.Upstream {
	up := translator.Upstream{
		Path: tr.t.Provider.BasePath + "/v1beta/" + tr.modelName() + method,
		Header: translator.Headers{
			{Key: "content-type", Value: "application/json"},
			// A compressed answer could not be translated chunk by chunk.
			{Key: "accept-encoding", Value: "identity"},
		},
		Body: body,
	}
	if tr.t.Key != "" {
		up.Header = append(up.Header, translator.Header{Key: "x-goog-api-key", Value: tr.t.Key})
	}
	return up
}

// modelName is the resource name "models/<upstream>"; a configured name
// that already carries the prefix is taken as is.
func (tr *Translator) modelName() string {
	return "models/" + url.PathEscape(strings.TrimPrefix(tr.t.Model.Upstream, "models/"))
}

// refuseUnmodelled refuses OpenAI parameters that ChatRequest does not
// model and Gemini cannot honour, so they are not dropped unseen.
func refuseUnmodelled(raw []byte) *openaiapi.Error {
	if len(raw) == 0 {
		return nil
	}
	var extra struct {
		Functions    json.RawMessage `json:"functions"`
		FunctionCall json.RawMessage `json:"function_call"`
		Prediction   json.RawMessage `json:"prediction"`
		Modalities   []string        `json:"modalities"`
	}
	if json.Unmarshal(raw, &extra) != nil {
		return nil // the parser has accepted the body; odd shapes here are not ours to judge
	}
	set := func(r json.RawMessage) bool { return len(r) > 0 && string(r) != "null" }
	switch {
	case set(extra.Functions):
		return refuse("functions", "the deprecated functions parameter is not supported for this model; use tools")
	case set(extra.FunctionCall):
		return refuse("function_call", "the deprecated function_call parameter is not supported for this model; use tool_choice")
	case set(extra.Prediction):
		return refuse("prediction", "predicted outputs are not supported for this model")
	}
	for _, m := range extra.Modalities {
		if m != "text" {
			return refuse("modalities", "only the text output modality is supported for this model")
		}
	}
	return nil
}

func (tr *Translator) generateRequest(req *openaiapi.ChatRequest) (*generateRequest, *openaiapi.Error) {
	g := &generateRequest{}
	if e := tr.conversation(req, g); e != nil {
		return nil, e
	}
	if e := tools(req, g); e != nil {
		return nil, e
	}
	gc, e := tr.generationConfig(req)
	if e != nil {
		return nil, e
	}
	g.GenerationConfig = gc
	return g, nil
}

// conversation maps the messages: the system and developer text that
// opens the conversation to systemInstruction, the rest to contents with
// roles user and model. A later system or developer message stays where it
// is, as marked text of a user content (see [translator.SystemNote]). Tool
// results become functionResponse parts of a user content; consecutive
// contents of the same role are merged, as Gemini wants turns to alternate.
func (tr *Translator) conversation(req *openaiapi.ChatRequest, g *generateRequest) *openaiapi.Error {
	names := map[string]string{} // tool-call id → function name
	var system []part
	leading := translator.LeadingSystem(req.Messages)
	for i := range req.Messages {
		m := &req.Messages[i]
		param := "messages[" + strconv.Itoa(i) + "]"
		switch m.Role {
		case "system", "developer":
			ps, e := textParts(m, param)
			if e != nil {
				return e
			}
			if i < leading {
				system = append(system, ps...)
			} else {
				g.Contents = appendContent(g.Contents, "user", systemNote(ps))
			}
		case "user":
			ps, e := userParts(m, param)
			if e != nil {
				return e
			}
			g.Contents = appendContent(g.Contents, "user", ps)
		case "assistant":
			ps, e := assistantParts(m, param, names)
			if e != nil {
				return e
			}
			g.Contents = appendContent(g.Contents, "model", ps)
		case "tool":
			name, ok := names[m.ToolCallID]
			if !ok {
				return refuse(param+".tool_call_id", "%s: tool_call_id %q matches no tool call of an earlier assistant message; the provider needs the function's name", param, m.ToolCallID)
			}
			p := part{FunctionResponse: &functionResponse{Name: name, Response: toolResponse(m.Content.PlainText())}}
			g.Contents = appendContent(g.Contents, "user", []part{p})
		default:
			return refuse(param+".role", "%s: role %q is not supported", param, m.Role)
		}
	}
	if len(system) > 0 {
		g.SystemInstruction = &content{Parts: system}
	}
	if len(g.Contents) == 0 {
		return refuse("messages", "this model needs at least one user or assistant message with content besides system messages")
	}
	return nil
}

// appendContent adds parts as a turn of role, merged into the previous turn
// when it has the same role. Empty turns are skipped: the API refuses them.
func appendContent(cs []content, role string, ps []part) []content {
	if len(ps) == 0 {
		return cs
	}
	if n := len(cs); n > 0 && cs[n-1].Role == role {
		cs[n-1].Parts = append(cs[n-1].Parts, ps...)
		return cs
	}
	return append(cs, content{Role: role, Parts: ps})
}

// toolResponse wraps a tool result in the object functionResponse.response
// must be: {"output": ...}. A result that is a JSON object or array is
// nested as JSON, so the model sees structure rather than an escaped
// string; anything else is kept as the exact text.
func toolResponse(text string) json.RawMessage {
	var out json.RawMessage
	trimmed := bytes.TrimSpace([]byte(text))
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		var buf bytes.Buffer
		_ = json.Compact(&buf, trimmed) // valid JSON always compacts
		out = buf.Bytes()
	} else {
		out, _ = json.Marshal(text) // a string always encodes
	}
	return json.RawMessage(`{"output":` + string(out) + `}`)
}

// textParts maps a system or developer message, which may hold text only.
func textParts(m *openaiapi.Message, param string) ([]part, *openaiapi.Error) {
	if !m.Content.IsParts {
		return textPart(nil, m.Content.Text), nil
	}
	var ps []part
	for j, p := range m.Content.Parts {
		if p.Type != "text" {
			return nil, refuse(param+".content["+strconv.Itoa(j)+"]", "%s: %s messages may hold text parts only", param, m.Role)
		}
		ps = textPart(ps, p.Text)
	}
	return ps, nil
}

// systemNote turns the text parts of a system message that comes after
// the conversation began into one marked text part.
func systemNote(ps []part) []part {
	if len(ps) == 0 {
		return nil
	}
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = p.Text
	}
	return []part{{Text: translator.SystemNote(strings.Join(texts, "\n"))}}
}

// textPart appends a text part unless the text is empty.
func textPart(ps []part, text string) []part {
	if text == "" {
		return ps
	}
	return append(ps, part{Text: text})
}

func userParts(m *openaiapi.Message, param string) ([]part, *openaiapi.Error) {
	if !m.Content.IsParts {
		return textPart(nil, m.Content.Text), nil
	}
	var ps []part
	for j, p := range m.Content.Parts {
		at := param + ".content[" + strconv.Itoa(j) + "]"
		switch p.Type {
		case "text":
			ps = textPart(ps, p.Text)
		case "image_url":
			if p.ImageURL == nil {
				return nil, refuse(at, "%s: image_url.url is required", at)
			}
			ip, e := imagePart(p.ImageURL.URL, at)
			if e != nil {
				return nil, e
			}
			ps = append(ps, ip)
		case "input_audio":
			if p.InputAudio == nil || audioTypes[p.InputAudio.Format] == "" {
				return nil, refuse(at, "%s: input_audio.format must be wav or mp3", at)
			}
			ps = append(ps, part{InlineData: &blob{MimeType: audioTypes[p.InputAudio.Format], Data: p.InputAudio.Data}})
		case "file":
			if p.File == nil || p.File.FileData == "" {
				return nil, refuse(at, "%s: only files sent inline as file_data are supported for this model, not file_id", at)
			}
			b, ok := parseDataURL(p.File.FileData)
			if !ok {
				return nil, refuse(at, "%s: file_data must be a base64 data URL (data:<type>;base64,...)", at)
			}
			ps = append(ps, part{InlineData: b})
		default:
			return nil, refuse(at, "%s: content parts of type %q are not supported in user messages", at, p.Type)
		}
	}
	return ps, nil
}

var audioTypes = map[string]string{"wav": "audio/wav", "mp3": "audio/mp3"}

// imageTypes maps the extensions of image URLs to the mime type fileData
// needs; Gemini does not sniff a URL's type itself.
var imageTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
	".gif": "image/gif", ".heic": "image/heic", ".heif": "image/heif",
}

func imagePart(rawURL, at string) (part, *openaiapi.Error) {
	if strings.HasPrefix(rawURL, "data:") {
		b, ok := parseDataURL(rawURL)
		if !ok {
			return part{}, refuse(at, "%s: image data URLs must be base64 (data:image/<type>;base64,...)", at)
		}
		return part{InlineData: b}, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return part{}, refuse(at, "%s: image_url.url must be an http(s) URL or a base64 data URL", at)
	}
	mime, ok := imageTypes[strings.ToLower(path.Ext(u.Path))]
	if !ok {
		return part{}, refuse(at, "%s: cannot tell the image type from the URL's extension (png, jpg, jpeg, webp, gif, heic, heif); send the image as a base64 data URL instead", at)
	}
	return part{FileData: &fileData{MimeType: mime, FileURI: rawURL}}, nil
}

// parseDataURL splits data:<mime>;base64,<data>. The payload is not decoded:
// the API does that, and a large image need not be copied twice.
func parseDataURL(s string) (*blob, bool) {
	meta, data, ok := strings.Cut(strings.TrimPrefix(s, "data:"), ",")
	if !ok || !strings.HasPrefix(s, "data:") || data == "" {
		return nil, false
	}
	mime, isBase64 := strings.CutSuffix(meta, ";base64")
	if !isBase64 || mime == "" {
		return nil, false
	}
	return &blob{MimeType: mime, Data: data}, true
}

// assistantParts maps an assistant message to a model turn: its text, then
// its tool calls as functionCall parts, recording each call's name by id so
// that later tool messages can name their function.
func assistantParts(m *openaiapi.Message, param string, names map[string]string) ([]part, *openaiapi.Error) {
	var ps []part
	if m.Content.IsParts {
		for j, p := range m.Content.Parts {
			switch p.Type {
			case "text":
				ps = textPart(ps, p.Text)
			case "refusal":
				ps = textPart(ps, p.Refusal)
			default:
				at := param + ".content[" + strconv.Itoa(j) + "]"
				return nil, refuse(at, "%s: assistant messages may hold text and refusal parts only", at)
			}
		}
	} else {
		ps = textPart(ps, m.Content.Text)
	}
	if len(ps) == 0 && m.Refusal != nil {
		ps = textPart(ps, *m.Refusal)
	}
	for j, tc := range m.ToolCalls {
		at := param + ".tool_calls[" + strconv.Itoa(j) + "]"
		if tc.Type != "" && tc.Type != "function" {
			return nil, refuse(at+".type", "%s: only function tool calls are supported", at)
		}
		args, ok := callArgs(tc.Function.Arguments)
		if !ok {
			return nil, refuse(at+".function.arguments", "%s: function.arguments must be a JSON object encoded as a string", at)
		}
		names[tc.ID] = tc.Function.Name
		ps = append(ps, part{
			FunctionCall:     &functionCall{Name: tc.Function.Name, Args: args},
			ThoughtSignature: signatureFromID(tc.ID),
		})
	}
	return ps, nil
}

// callArgs turns OpenAI's arguments string into Gemini's args object; an
// empty string means no arguments.
func callArgs(s string) (json.RawMessage, bool) {
	trimmed := bytes.TrimSpace([]byte(s))
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), true
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, false
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, trimmed) // valid JSON always compacts
	return buf.Bytes(), true
}

// signatureFromID recovers the thought signature smuggled in a tool-call id
// minted by this translator. The id carries it in URL-safe base64 (ids
// stay within [A-Za-z0-9_-], which other providers accept); Gemini gets it
// back in the standard encoding it sent.
func signatureFromID(id string) string {
	_, sig, ok := strings.Cut(id, thoughtSeparator)
	if !ok || sig == "" {
		return ""
	}
	if b, err := base64.RawURLEncoding.DecodeString(sig); err == nil {
		return base64.StdEncoding.EncodeToString(b)
	}
	return sig
}

// signatureForID is the other half of signatureFromID.
func signatureForID(sig string) string {
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(sig); err != nil {
			return sig
		}
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// tools maps function tools to one Tool of functionDeclarations, and
// tool_choice to functionCallingConfig.
func tools(req *openaiapi.ChatRequest, g *generateRequest) *openaiapi.Error {
	declared := map[string]bool{}
	var decls []functionDeclaration
	budget := newSchemaBudget()
	for i, t := range req.Tools {
		at := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "function" {
			return refuse(at+".type", "%s: only function tools are supported", at)
		}
		if !functionNameRE.MatchString(t.Function.Name) {
			return refuse(at+".function.name", "%s: function name %q must start with a letter or underscore for this model", at, t.Function.Name)
		}
		params, err := cleanParameters(t.Function.Parameters, budget)
		if err != nil {
			where := at + ".function.parameters"
			if se := (*schemaError)(nil); errors.As(err, &se) {
				where, err = where+se.at, se.err
			}
			return refuse(at+".function.parameters", "%s: %v; Gemini's function declarations cannot take this schema", where, err)
		}
		declared[t.Function.Name] = true
		decls = append(decls, functionDeclaration{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	if len(decls) > 0 {
		g.Tools = []tool{{FunctionDeclarations: decls}}
	}
	tc := req.ToolChoice
	switch {
	case tc == nil:
	case tc.Function != "":
		if !declared[tc.Function] {
			return refuse("tool_choice", "tool_choice names function %q, which is not among the tools", tc.Function)
		}
		g.ToolConfig = &toolConfig{FunctionCallingConfig: functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{tc.Function}}}
	case len(decls) == 0:
		if tc.Mode == "required" {
			return refuse("tool_choice", `tool_choice "required" needs tools`)
		}
	default:
		mode := map[string]string{"none": "NONE", "auto": "AUTO", "required": "ANY"}[tc.Mode]
		g.ToolConfig = &toolConfig{FunctionCallingConfig: functionCallingConfig{Mode: mode}}
	}
	return nil
}

func (tr *Translator) generationConfig(req *openaiapi.ChatRequest) (generationConfig, *openaiapi.Error) {
	switch {
	case req.N != nil && *req.N > 1:
		return generationConfig{}, refuse("n", "n must be 1 for this model")
	case req.Logprobs != nil && *req.Logprobs:
		return generationConfig{}, refuse("logprobs", "logprobs are not supported for this model")
	case req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return generationConfig{}, refuse("top_logprobs", "top_logprobs is not supported for this model")
	case len(req.LogitBias) > 0:
		return generationConfig{}, refuse("logit_bias", "logit_bias is not supported for this model")
	case len(req.Stop) > maxStopSequences:
		return generationConfig{}, refuse("stop", "this model accepts at most %d stop sequences", maxStopSequences)
	case req.Seed != nil && (*req.Seed < math.MinInt32 || *req.Seed > math.MaxInt32):
		return generationConfig{}, refuse("seed", "seed must fit in 32 bits for this model")
	}
	gc := generationConfig{
		Temperature:      req.Temperature,
		TopP:             req.TopP,
		MaxOutputTokens:  tr.outputCap(req),
		StopSequences:    req.Stop,
		Seed:             req.Seed,
		PresencePenalty:  req.PresencePenalty,
		FrequencyPenalty: req.FrequencyPenalty,
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "text":
		case "json_object":
			gc.ResponseMimeType = "application/json"
		case "json_schema":
			gc.ResponseMimeType = "application/json"
			if rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0 && string(rf.JSONSchema.Schema) != "null" {
				gc.ResponseJSONSchema = rf.JSONSchema.Schema
			}
		default:
			return gc, refuse("response_format.type", "response_format type %q is not supported", rf.Type)
		}
	}
	return gc, nil
}

// outputCap is the model's output limit for the request (0 leaves the
// provider's default).
func (tr *Translator) outputCap(req *openaiapi.ChatRequest) int {
	return tr.t.OutputLimit(req.OutputCap())
}
