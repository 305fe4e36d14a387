package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// fallbackMaxTokens is the output cap sent when neither the client nor the
// model's configuration gives one; Anthropic requires max_tokens.
const fallbackMaxTokens = 4096

// Request implements [translator.Translator.Request]. The body is rebuilt
// from the parsed request; raw is not needed.
func (tr *Translator) Request(req *openaiapi.ChatRequest, _ []byte) (translator.Upstream, *openaiapi.Error) {
	if e := refuseUnsupported(req); e != nil {
		return translator.Upstream{}, e
	}
	conv, e := convertMessages(req.Messages)
	if e != nil {
		return translator.Upstream{}, e
	}
	out := request{
		Model:         tr.t.Model.Upstream,
		MaxTokens:     maxTokens(req, tr.t),
		System:        conv.system,
		Messages:      conv.turns,
		StopSequences: stopSequences(req.Stop),
		Temperature:   temperature(req.Temperature),
		TopP:          req.TopP,
		Stream:        req.Stream,
	}
	if req.User != "" {
		out.Metadata = &metadata{UserID: req.User}
	}
	if out.Tools, out.ToolChoice, tr.jsonTool, e = toolConfig(req, conv.toolNames); e != nil {
		return translator.Upstream{}, e
	}
	// Every raw JSON field was parsed or compacted above: Marshal cannot fail.
	body, _ := json.Marshal(out)
	tr.includeUsage = req.IncludeUsage()
	up := translator.Upstream{
		Path: tr.t.Provider.BasePath + "/v1/messages",
		Header: translator.Headers{
			{Key: "content-type", Value: "application/json"},
			{Key: "anthropic-version", Value: apiVersion},
		},
		Body: body,
	}
	if tr.t.Key != "" {
		up.Header = append(up.Header, translator.Header{Key: "x-api-key", Value: tr.t.Key})
	}
	return up, nil
}

func badRequest(code, param, format string, args ...any) *openaiapi.Error {
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, code, format, args...).WithParam(param)
}

// refuseUnsupported refuses the parameters Anthropic has no equivalent for
// and whose absence a client would notice (more choices, log
// probabilities, token biases in another tokenizer's ids).
func refuseUnsupported(req *openaiapi.ChatRequest) *openaiapi.Error {
	switch {
	case req.N != nil && *req.N > 1:
		return badRequest("unsupported_value", "n", "n must be 1 for this model")
	case req.Logprobs != nil && *req.Logprobs:
		return badRequest("unsupported_parameter", "logprobs", "logprobs are not supported for this model")
	case req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return badRequest("unsupported_parameter", "top_logprobs", "top_logprobs are not supported for this model")
	case len(req.LogitBias) > 0:
		return badRequest("unsupported_parameter", "logit_bias", "logit_bias is not supported for this model")
	}
	return nil
}

// maxTokens is the client's cap, else the model's configured default,
// never above the model's maximum output (nor, on a route that fits
// output to the context window, above what the window leaves the
// prompt). Anthropic requires one, so a request and a model without
// any get fallbackMaxTokens.
func maxTokens(req *openaiapi.ChatRequest, t translator.Target) int {
	if n := t.OutputLimit(req.OutputCap()); n > 0 {
		return n
	}
	return t.OutputLimit(fallbackMaxTokens)
}

// temperature clamps OpenAI's 0–2 range to Anthropic's 0–1, as
// Anthropic's own OpenAI-compatible endpoint does.
func temperature(t *float64) *float64 {
	if t == nil || *t <= 1 {
		return t
	}
	one := 1.0
	return &one
}

// stopSequences drops whitespace-only sequences, which Anthropic refuses.
func stopSequences(stop openaiapi.StringList) []string {
	var out []string
	for _, s := range stop {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// toolConfig maps tools, tool_choice, parallel_tool_calls and the JSON
// response formats. history lists the functions the conversation already
// called: Anthropic refuses tool blocks in a request without tools.
func toolConfig(req *openaiapi.ChatRequest, history []string) (tools []tool, choice *toolChoice, jsonTool bool, e *openaiapi.Error) {
	for i, t := range req.Tools {
		param := "tools[" + strconv.Itoa(i) + "]"
		if t.Function.Name == jsonToolName {
			return nil, nil, false, badRequest("invalid_value", param+".function.name", "the tool name %q is reserved by the gateway", jsonToolName)
		}
		schema, ok := objectSchema(t.Function.Parameters)
		if !ok {
			return nil, nil, false, badRequest("invalid_value", param+".function.parameters", "function parameters must be a JSON schema of type object")
		}
		tools = append(tools, tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	if choice, e = mapToolChoice(req.ToolChoice, req.Tools); e != nil {
		return nil, nil, false, e
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object", "json_schema":
			if tools, choice, jsonTool, e = addJSONTool(rf, tools, choice); e != nil {
				return nil, nil, false, e
			}
		default:
			return nil, nil, false, badRequest("invalid_value", "response_format.type", "response_format.type must be text, json_object or json_schema")
		}
	}
	if len(req.Tools) == 0 && len(history) > 0 {
		// The history calls tools the client no longer offers: declare them
		// (with an open schema) and, unless JSON mode already forces a tool,
		// forbid calling them, which is what the client's request means.
		for _, name := range history {
			tools = append(tools, tool{Name: name, Description: "A tool this conversation used earlier.", InputSchema: emptyObjectSchema})
		}
		if choice == nil {
			choice = &toolChoice{Type: "none"}
		}
	}
	if p := req.ParallelToolCalls; p != nil && !*p && choice != nil && choice.Type != "none" {
		choice.DisableParallelToolUse = true
	}
	return tools, choice, jsonTool, nil
}

func mapToolChoice(tc *openaiapi.ToolChoice, tools []openaiapi.Tool) (*toolChoice, *openaiapi.Error) {
	if len(tools) == 0 {
		if tc != nil && (tc.Function != "" || tc.Mode == "required") {
			return nil, badRequest("invalid_value", "tool_choice", "tool_choice requires tools")
		}
		return nil, nil
	}
	switch {
	case tc == nil || tc.Mode == "auto":
		return &toolChoice{Type: "auto"}, nil
	case tc.Mode == "required":
		return &toolChoice{Type: "any"}, nil
	case tc.Mode == "none":
		return &toolChoice{Type: "none"}, nil
	}
	for _, t := range tools {
		if t.Function.Name == tc.Function {
			return &toolChoice{Type: "tool", Name: tc.Function}, nil
		}
	}
	return nil, badRequest("invalid_value", "tool_choice", "tool_choice names the function %q, which is not in tools", tc.Function)
}

// addJSONTool emulates JSON mode with a tool whose input schema is the
// requested one. When the model may not call tools, or no tools exist, it
// is forced to call that tool; when it may call the client's tools, it
// must call some tool: one of the client's, or the JSON answer. When it
// must call a client tool, the answer holds no content and the JSON tool
// is not needed. added reports whether the JSON tool was added.
func addJSONTool(rf *openaiapi.ResponseFormat, tools []tool, choice *toolChoice) (_ []tool, _ *toolChoice, added bool, e *openaiapi.Error) {
	schema, desc := emptyObjectSchema, "Respond with a JSON object."
	if s := rf.JSONSchema; rf.Type == "json_schema" && s != nil {
		var ok bool
		if schema, ok = objectSchema(s.Schema); !ok {
			return nil, nil, false, badRequest("invalid_value", "response_format.json_schema.schema", "the response schema must be a JSON schema of type object for this model")
		}
		desc = "Respond with a JSON object that matches the schema."
		if s.Description != "" {
			desc += " " + s.Description
		}
	}
	switch {
	case choice == nil || choice.Type == "none":
		choice = &toolChoice{Type: "tool", Name: jsonToolName, DisableParallelToolUse: true}
	case choice.Type == "auto":
		choice = &toolChoice{Type: "any"}
	default:
		return tools, choice, false, nil
	}
	return append(tools, tool{Name: jsonToolName, Description: desc, InputSchema: schema}), choice, true, nil
}

// objectSchema returns a JSON schema usable as an Anthropic input_schema,
// which must be of type object: an absent schema means no arguments, and
// an object schema without a type gets "type":"object".
func objectSchema(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return emptyObjectSchema, true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, false
	}
	typ, ok := obj["type"]
	if !ok {
		obj["type"] = json.RawMessage(`"object"`)
		b, err := json.Marshal(obj)
		return b, err == nil
	}
	if string(bytes.TrimSpace(typ)) != `"object"` {
		return nil, false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}
