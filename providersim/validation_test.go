package providersim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/providersim"
)

// nativeError pulls the error type and message out of any kind's error
// envelope.
func nativeError(t *testing.T, kind providersim.Kind, body string) (typ, msg string) {
	t.Helper()
	var e struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Error   struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Status  string `json:"status"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body is not JSON: %v\n%s", err, body)
	}
	switch kind {
	case providersim.KindOpenAICompatible:
		return e.Type, e.Message
	case providersim.KindGemini:
		return e.Error.Status, e.Error.Message
	}
	return e.Error.Type, e.Error.Message
}

// TestValidation checks each request rule a simulator enforces, with the
// status, error type and message the real API uses.
func TestValidation(t *testing.T) {
	const (
		oaPath = "/v1/chat/completions"
		rsPath = "/v1/responses"
		anPath = "/v1/messages"
		gmPath = "/v1beta/models/gemini-2.5-flash:generateContent"
		anTool = `"tools":[{"name":"t","input_schema":{"type":"object"}}]`
		oaTool = `"tools":[{"type":"function","function":{"name":"t"}}]`
		gmTool = `"tools":[{"functionDeclarations":[{"name":"t"}]}]`
	)
	tests := []struct {
		name       string
		kind       providersim.Kind
		call       call
		wantStatus int
		wantType   string
		wantMsg    string // substring
	}{
		// OpenAI.
		{"openai invalid JSON", providersim.KindOpenAI, call{path: oaPath, body: `{"model":`}, 400, "invalid_request_error", "could not parse the JSON body"},
		{"openai missing model", providersim.KindOpenAI, call{path: oaPath, body: `{"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "you must provide a model parameter"},
		{"openai empty messages", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","messages":[]}`}, 400, "invalid_request_error", "empty array"},
		{"openai unknown role", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","messages":[{"role":"robot","content":"Hi"}]}`}, 400, "invalid_request_error", "Invalid value: 'robot'"},
		// OpenAI Responses.
		{"responses missing model", providersim.KindOpenAI, call{path: rsPath, body: `{"input":"Hi"}`}, 400, "invalid_request_error", "Missing required parameter: 'model'"},
		{"responses missing input", providersim.KindOpenAI, call{path: rsPath, body: `{"model":"m"}`}, 400, "invalid_request_error", "Missing required parameter: 'input'"},
		{"responses previous response", providersim.KindOpenAI, call{path: rsPath, body: `{"model":"m","input":"Hi","previous_response_id":"resp_1"}`}, 400, "invalid_request_error", "Previous response with id 'resp_1' not found"},
		{"responses cap below 16", providersim.KindOpenAI, call{path: rsPath, body: `{"model":"m","input":"Hi","max_output_tokens":5}`}, 400, "invalid_request_error", "Expected a value >= 16"},
		{"responses unknown item", providersim.KindOpenAI, call{path: rsPath, body: `{"model":"m","input":[{"type":"telepathy"}]}`}, 400, "invalid_request_error", "Invalid value: 'telepathy'"},
		{"responses unknown role", providersim.KindOpenAI, call{path: rsPath, body: `{"model":"m","input":[{"role":"robot","content":"Hi"}]}`}, 400, "invalid_request_error", "Invalid value: 'robot'"},
		{"responses call without output", providersim.KindOpenAI, call{path: rsPath, body: `{"model":"m","input":[{"role":"user","content":"Hi"},{"type":"function_call","call_id":"c1","name":"t","arguments":"{}"}]}`}, 400, "invalid_request_error", "No tool output found for function call c1"},
		{"responses output without call", providersim.KindOpenAI, call{path: rsPath, body: `{"model":"m","input":[{"role":"user","content":"Hi"},{"type":"function_call_output","call_id":"c1","output":"r"}]}`}, 400, "invalid_request_error", "No tool call found for function call output with call_id c1"},
		{"responses forced tool missing", providersim.KindOpenAI, call{path: rsPath, body: `{"model":"m","input":"Hi","tools":[{"type":"function","name":"t"}],"tool_choice":{"type":"function","name":"u"}}`}, 400, "invalid_request_error", "Tool choice 'u' not found"},
		{"responses not served by compatible servers", providersim.KindOpenAICompatible, call{path: rsPath, body: `{"model":"m","input":"Hi"}`}, 404, "invalid_request_error", "Invalid URL (POST /v1/responses)"},
		{"openai content of the wrong type", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","messages":[{"role":"user","content":42}]}`}, 400, "invalid_request_error", "Invalid type for 'messages.[0].content'"},
		{"openai tool message without id", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"tool","content":"r"}]}`}, 400, "invalid_request_error", "Missing required parameter: 'messages.[1].tool_call_id'"},
		{"openai tool message answering nothing", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"tool","tool_call_id":"call_1","content":"r"}]}`}, 400, "invalid_request_error", "must be a response to a preceeding message with 'tool_calls'"},
		{"openai tool calls left unanswered", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"t","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"t","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"r"},{"role":"user","content":"and?"}],` + oaTool + `}`}, 400, "invalid_request_error", "did not have response messages: call_2"},
		{"openai max_tokens below one", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "Invalid 'max_tokens': integer below minimum value"},
		{"openai tool_choice without tools", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","tool_choice":"required","messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "only allowed when 'tools' are specified"},
		{"openai forced tool not in tools", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","tool_choice":{"type":"function","function":{"name":"nope"}},"messages":[{"role":"user","content":"Hi"}],` + oaTool + `}`}, 400, "invalid_request_error", "tool 'nope' was not found"},
		{"openai answered tool calls pass", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"t","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"t","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_2","content":"r"},{"role":"tool","tool_call_id":"call_1","content":"r"}],` + oaTool + `}`}, 200, "", ""},
		{"openai response_format of an unknown type", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","response_format":{"type":"yaml"},"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "Invalid value: 'yaml'"},
		{"openai json_schema without json_schema", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","response_format":{"type":"json_schema"},"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "Missing required parameter: 'response_format.json_schema'."},
		{"openai json_schema without a name", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}},"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "Missing required parameter: 'response_format.json_schema.name'."},
		{"openai embeddings empty input", providersim.KindOpenAI, call{path: "/v1/embeddings", body: `{"model":"e","input":""}`}, 400, "invalid_request_error", "'$.input' is invalid"},
		{"openai embeddings unknown encoding", providersim.KindOpenAI, call{path: "/v1/embeddings", body: `{"model":"e","input":"a","encoding_format":"hex"}`}, 400, "invalid_request_error", "Invalid value for 'encoding_format'"},
		{"openai embeddings too many dimensions", providersim.KindOpenAI, call{path: "/v1/embeddings", body: `{"model":"e","input":"a","dimensions":100000}`}, 400, "invalid_request_error", "Invalid 'dimensions'"},
		{"openai embeddings token ids pass", providersim.KindOpenAI, call{path: "/v1/embeddings", body: `{"model":"e","input":[[1,2,3],[4]]}`}, 200, "", ""},
		{"compatible stream_options without stream", providersim.KindOpenAICompatible, call{path: oaPath, body: `{"model":"m","stream":false,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`}, 400, "BadRequestError", "Stream options can only be defined when `stream=True`"},
		{"compatible stream_options with stream pass", providersim.KindOpenAICompatible, call{path: oaPath, body: `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`}, 200, "", ""},
		{"openai accepts stream_options without stream", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"m","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`}, 200, "", ""},
		{"azure without api-version", providersim.KindAzureOpenAI, call{path: "/openai/deployments/d/chat/completions", body: `{"messages":[{"role":"user","content":"Hi"}]}`}, 404, "", "Resource not found"},
		{"azure with a malformed api-version", providersim.KindAzureOpenAI, call{path: "/openai/deployments/d/chat/completions?api-version=v1", body: `{"messages":[{"role":"user","content":"Hi"}]}`}, 400, "", "API version not supported"},
		{"azure preview api-version passes", providersim.KindAzureOpenAI, call{path: "/openai/deployments/d/chat/completions?api-version=2025-04-01-preview", body: `{"messages":[{"role":"user","content":"Hi"}]}`}, 200, "", ""},

		// Anthropic.
		{"anthropic without version header", providersim.KindAnthropic, call{path: anPath, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "anthropic-version: header is required"},
		{"anthropic invalid JSON", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{`}, 400, "invalid_request_error", "error parsing the body"},
		{"anthropic without model", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"max_tokens":5,"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "model: Field required"},
		{"anthropic without max_tokens", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "max_tokens: Field required"},
		{"anthropic without messages", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5}`}, 400, "invalid_request_error", "messages: Field required"},
		{"anthropic temperature above one", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "temperature: range: 0..1"},
		{"anthropic unknown role", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"robot","content":"Hi"}]}`}, 400, "invalid_request_error", "messages.0.role: Input should be 'user', 'assistant' or 'system'"},
		{"anthropic starts with a system turn", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", `first message must use the "user" role`},
		{"anthropic system turn after an assistant turn", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"system","content":"Be brief."}]}`}, 400, "invalid_request_error", "messages.2: a system message must immediately follow a user message"},
		{"anthropic system turn followed by a user turn", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "messages.1: a system message must be the last message or be followed by an assistant message"},
		{"anthropic system turns in a row", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"system","content":"Be brief."},{"role":"system","content":"Be kind."}]}`}, 400, "invalid_request_error", "messages.1: a system message must be the last message or be followed by an assistant message"},
		{"anthropic system turn with an image", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"system","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`}, 400, "invalid_request_error", `messages.1.content.0.type: system messages may only hold text blocks, got "image"`},
		{"anthropic empty system turn", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"system","content":" "}]}`}, 400, "invalid_request_error", "messages.1.content.0.text: text content blocks must contain non-whitespace text"},
		{"anthropic output_config format of another type", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"output_config":{"format":{"type":"json_object"}},"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "output_config.format.type: Input tag 'json_object'"},
		{"anthropic output_format without a schema", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"output_format":{"type":"json_schema"},"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "output_format.schema: Field required"},
		{"anthropic starts with assistant", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"assistant","content":"Hi"},{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", `first message must use the "user" role`},
		{"anthropic roles do not alternate", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"user","content":"again"}]}`}, 400, "invalid_request_error", "roles must alternate"},
		{"anthropic empty string content", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":""}]}`}, 400, "invalid_request_error", "all messages must have non-empty content"},
		{"anthropic empty text block", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":""}]}]}`}, 400, "invalid_request_error", "messages.0.content.1.text: text content blocks must be non-empty"},
		{"anthropic whitespace text block", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":" \n"}]}]}`}, 400, "invalid_request_error", "must contain non-whitespace text"},
		{"anthropic empty system block", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"system":[{"type":"text","text":""}],"messages":[{"role":"user","content":"Hi"}]}`}, 400, "invalid_request_error", "system.0.text"},
		{"anthropic tool blocks without tools", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"r"}]}]}`}, 400, "invalid_request_error", "must define tools"},
		{"anthropic tool_result not first", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"t","input":{}}]},{"role":"user","content":[{"type":"text","text":"here"},{"type":"tool_result","tool_use_id":"tu_1","content":"r"}]}],` + anTool + `}`}, 400, "invalid_request_error", "Did not find 1 `tool_result` block(s) at the beginning of this message"},
		{"anthropic tool_result for another id", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_9","content":"r"}]}],` + anTool + `}`}, 400, "invalid_request_error", "unexpected `tool_use_id` found in `tool_result` blocks: tu_9"},
		{"anthropic tool_result with no tool_use before", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"r"}]}],` + anTool + `}`}, 400, "invalid_request_error", "unexpected `tool_use_id`"},
		{"anthropic one of two tool_uses answered", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"t","input":{}},{"type":"tool_use","id":"tu_2","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"r"},{"type":"text","text":"and?"}]}],` + anTool + `}`}, 400, "invalid_request_error", "Did not find 2 `tool_result` block(s)"},
		{"anthropic tool_use in the final message", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"t","input":{}}]}],` + anTool + `}`}, 400, "invalid_request_error", "`tool_use` ids were found without `tool_result` blocks immediately after: tu_1"},
		{"anthropic tool_use input not an object", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"t","input":"{}"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"r"}]}],` + anTool + `}`}, 400, "invalid_request_error", "an object input"},
		{"anthropic tool_use in a user message", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"tu_1","name":"t","input":{}}]}],` + anTool + `}`}, 400, "invalid_request_error", "can only be in `assistant` messages"},
		{"anthropic prefill with trailing whitespace", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Sure "}]}`}, 400, "invalid_request_error", "cannot end with trailing whitespace"},
		{"anthropic forced tool not in tools", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"tool_choice":{"type":"tool","name":"nope"},"messages":[{"role":"user","content":"Hi"}],` + anTool + `}`}, 400, "invalid_request_error", "Tool 'nope' not found"},
		{"anthropic prefill passes", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Sure"}]}`}, 200, "", ""},
		{"anthropic max_tokens zero passes", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":0,"messages":[{"role":"user","content":"Hi"}]}`}, 200, "", ""},
		{"anthropic system turns take no part in alternation", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"system","content":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"Hello"},{"role":"user","content":"Bye"},{"role":"system","content":"Be kind."}]}`}, 200, "", ""},
		{"anthropic system turn after a server tool call passes", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}]},{"role":"system","content":"Cite sources."},{"role":"assistant","content":"Sure"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`}, 200, "", ""},
		{"anthropic Claude Code's fields pass", providersim.KindAnthropic, call{path: anPath + "?beta=true", header: anthropicHeaders, body: `{"model":"c","max_tokens":128000,"thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"medium"},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"metadata":{"user_id":"{\"device_id\":\"d\"}"},"messages":[{"role":"user","content":[{"type":"text","text":"Hi","cache_control":{"type":"ephemeral"}}]}],"tools":[{"name":"t","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}},{"name":"u","input_schema":{"type":"object"},"defer_loading":true}],"some_future_field":{"x":1}}`}, 200, "", ""},
		{"anthropic answered tool_uses then text pass", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"tu_1","name":"t","input":{}},{"type":"tool_use","id":"tu_2","name":"t","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_2","content":[{"type":"text","text":"r2"}]},{"type":"tool_result","tool_use_id":"tu_1","content":"r1"},{"type":"text","text":"thanks"}]}],` + anTool + `}`}, 200, "", ""},

		// Gemini.
		{"gemini invalid JSON", providersim.KindGemini, call{path: gmPath, body: `{"contents":`}, 400, "INVALID_ARGUMENT", "Invalid JSON payload received"},
		{"gemini without contents", providersim.KindGemini, call{path: gmPath, body: `{}`}, 400, "INVALID_ARGUMENT", "contents is not specified"},
		{"gemini assistant role", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"role":"assistant","parts":[{"text":"Hi"}]}]}`}, 400, "INVALID_ARGUMENT", "Please use a valid role: user, model."},
		{"gemini empty parts", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"role":"user","parts":[]}]}`}, 400, "INVALID_ARGUMENT", "contents[0].parts: contents.parts must not be empty"},
		{"gemini part without data", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"role":"user","parts":[{}]}]}`}, 400, "INVALID_ARGUMENT", "required oneof field 'data'"},
		{"gemini functionResponse without name", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"role":"user","parts":[{"functionResponse":{"response":{"output":"r"}}}]}],` + gmTool + `}`}, 400, "INVALID_ARGUMENT", "contents[0].parts[0].function_response.name: Name cannot be empty"},
		{"gemini functionResponse with a string response", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"t","response":"r"}}]}],` + gmTool + `}`}, 400, "INVALID_ARGUMENT", "Invalid value at 'contents[0].parts[0].function_response.response' (type.googleapis.com/google.protobuf.Struct)"},
		{"gemini functionResponse without response", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"t"}}]}],` + gmTool + `}`}, 400, "INVALID_ARGUMENT", "function_response.response"},
		{"gemini functionCall args not an object", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"t","args":[1]}}]}],` + gmTool + `}`}, 400, "INVALID_ARGUMENT", "function_call.args"},
		{"gemini unknown function calling mode", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"parts":[{"text":"Hi"}]}],"toolConfig":{"functionCallingConfig":{"mode":"SOMETIMES"}},` + gmTool + `}`}, 400, "INVALID_ARGUMENT", "function_calling_config.mode"},
		{"gemini allowed names without ANY", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"parts":[{"text":"Hi"}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO","allowedFunctionNames":["t"]}},` + gmTool + `}`}, 400, "INVALID_ARGUMENT", "allowed_function_names"},
		{"gemini temperature above two", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"parts":[{"text":"Hi"}]}],"generationConfig":{"temperature":2.5}}`}, 400, "INVALID_ARGUMENT", "temperature"},
		{"gemini batch embed with another model", providersim.KindGemini, call{path: "/v1beta/models/e:batchEmbedContents", body: `{"requests":[{"model":"models/other","content":{"parts":[{"text":"a"}]}}]}`}, 400, "INVALID_ARGUMENT", "does not match the model in the URL"},
		{"gemini embed with too many dimensions", providersim.KindGemini, call{path: "/v1beta/models/e:embedContent", body: `{"content":{"parts":[{"text":"a"}]},"outputDimensionality":100000}`}, 400, "INVALID_ARGUMENT", "output_dimensionality"},
		{"gemini embed without text", providersim.KindGemini, call{path: "/v1beta/models/e:embedContent", body: `{"content":{"parts":[]}}`}, 400, "INVALID_ARGUMENT", "content is not specified"},
		{"gemini unknown method", providersim.KindGemini, call{path: "/v1beta/models/g:predict", body: `{}`}, 404, "NOT_FOUND", "not supported"},
		{"gemini role-less user content passes", providersim.KindGemini, call{path: gmPath, body: `{"contents":[{"parts":[{"text":"Hi"}]}]}`}, 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, _ := startKind(t, tt.kind)
			resp, body := do(t, sim.URL(string(tt.kind)), tt.call)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("got status %d, want %d; body: %s", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantStatus == 200 {
				return
			}
			typ, msg := nativeError(t, tt.kind, body)
			if typ != tt.wantType || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("got error %q %q, want type %q with message containing %q", typ, msg, tt.wantType, tt.wantMsg)
			}
		})
	}
}

// TestUnknownModel checks that Models restricts what a provider serves,
// with each kind's native 404.
func TestUnknownModel(t *testing.T) {
	tests := []struct {
		kind     providersim.Kind
		call     call
		wantType string
		wantMsg  string
	}{
		{providersim.KindOpenAI, call{path: "/v1/chat/completions", body: `{"model":"other","messages":[{"role":"user","content":"Hi"}]}`}, "invalid_request_error", "The model `other` does not exist"},
		{providersim.KindOpenAI, call{path: "/v1/embeddings", body: `{"model":"other","input":"a"}`}, "invalid_request_error", "The model `other` does not exist"},
		{providersim.KindAzureOpenAI, call{path: "/openai/deployments/other/chat/completions?api-version=2024-10-21", body: `{"messages":[{"role":"user","content":"Hi"}]}`}, "", "The API deployment for this resource does not exist"},
		{providersim.KindOpenAICompatible, call{path: "/v1/chat/completions", body: `{"model":"other","messages":[{"role":"user","content":"Hi"}]}`}, "NotFoundError", "The model `other` does not exist."},
		{providersim.KindAnthropic, call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"other","max_tokens":5,"messages":[{"role":"user","content":"Hi"}]}`}, "not_found_error", "model: other"},
		{providersim.KindGemini, call{path: "/v1beta/models/other:generateContent", body: `{"contents":[{"parts":[{"text":"Hi"}]}]}`}, "NOT_FOUND", "models/other is not found"},
		{providersim.KindGemini, call{path: "/v1beta/models/other:embedContent", body: `{"content":{"parts":[{"text":"Hi"}]}}`}, "NOT_FOUND", "models/other is not found"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind)+tt.call.path, func(t *testing.T) {
			sim, _ := startSim(t, providersim.ProviderConfig{Kind: tt.kind, Models: []string{"known"}})
			resp, body := do(t, sim.URL(string(tt.kind)), tt.call)
			if resp.StatusCode != 404 {
				t.Fatalf("got status %d, want 404; body: %s", resp.StatusCode, body)
			}
			typ, msg := nativeError(t, tt.kind, body)
			if typ != tt.wantType || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("got error %q %q, want type %q with message containing %q", typ, msg, tt.wantType, tt.wantMsg)
			}
		})
	}
}
