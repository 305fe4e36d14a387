package providersim_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/providersim"
)

// outcome is what a test asserts about one reply, in any dialect.
type outcome struct {
	Text string
	Tool string
	Args string
}

// replyOutcome reads a non-streamed reply of any chat dialect.
func replyOutcome(t *testing.T, kind providersim.Kind, body string) outcome {
	t.Helper()
	var o outcome
	var err error
	switch kind {
	case providersim.KindAnthropic:
		var m struct {
			Content []struct {
				Type  string          `json:"type"`
				Text  string          `json:"text"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
		}
		err = json.Unmarshal([]byte(body), &m)
		for _, b := range m.Content {
			o.Text += b.Text
			if b.Type == "tool_use" {
				o.Tool, o.Args = b.Name, string(b.Input)
			}
		}
	case providersim.KindGemini:
		var r struct {
			Candidates []struct {
				Content struct {
					Parts []struct {
						Text         string `json:"text"`
						FunctionCall *struct {
							Name string          `json:"name"`
							Args json.RawMessage `json:"args"`
						} `json:"functionCall"`
					} `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
		}
		err = json.Unmarshal([]byte(body), &r)
		for _, c := range r.Candidates {
			for _, p := range c.Content.Parts {
				o.Text += p.Text
				if p.FunctionCall != nil {
					o.Tool, o.Args = p.FunctionCall.Name, string(p.FunctionCall.Args)
				}
			}
		}
	default:
		var c struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		err = json.Unmarshal([]byte(body), &c)
		for _, ch := range c.Choices {
			if ch.Message.Content != nil {
				o.Text += *ch.Message.Content
			}
			for _, tc := range ch.Message.ToolCalls {
				o.Tool, o.Args = tc.Function.Name, tc.Function.Arguments
			}
		}
	}
	if err != nil {
		t.Fatalf("reply is not the kind's JSON: %v\n%s", err, body)
	}
	return o
}

// turn is one step of a conversation, rendered in each dialect's shape.
type turn struct {
	role string // system (the system prompt), user, call (an assistant tool call), result (its answer), assistant (text)
	text string // the tool name for a call
}

// scriptTools are the tools every scripted case offers.
var scriptTools = []struct{ name, param string }{{"get_weather", "city"}, {"get_time", "zone"}}

// chatRequest renders turns and a tool choice ("", "none", "required", or
// a tool's name) as a request of kind: its path and body.
func chatRequest(kind providersim.Kind, turns []turn, choice string) call {
	var msgs []any
	body := map[string]any{}
	callID := func(i int) string { return fmt.Sprintf("call_%d", i) }
	lastCall := ""
	for i, tn := range turns {
		switch kind {
		case providersim.KindAnthropic:
			switch tn.role {
			case "system":
				body["system"] = tn.text
			case "user":
				msgs = append(msgs, map[string]any{"role": "user", "content": tn.text})
			case "assistant":
				msgs = append(msgs, map[string]any{"role": "assistant", "content": tn.text})
			case "call":
				msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": callID(i), "name": tn.text, "input": map[string]any{}}}})
			case "result":
				msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": callID(i - 1), "content": tn.text}}})
			}
		case providersim.KindGemini:
			switch tn.role {
			case "system":
				body["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": tn.text}}}
			case "user":
				msgs = append(msgs, map[string]any{"role": "user", "parts": []any{map[string]any{"text": tn.text}}})
			case "assistant":
				msgs = append(msgs, map[string]any{"role": "model", "parts": []any{map[string]any{"text": tn.text}}})
			case "call":
				msgs = append(msgs, map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": tn.text, "args": map[string]any{}}}}})
				lastCall = tn.text
			case "result":
				msgs = append(msgs, map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": lastCall, "response": map[string]any{"output": tn.text}}}}})
			}
		default:
			switch tn.role {
			case "system", "user", "assistant":
				msgs = append(msgs, map[string]any{"role": tn.role, "content": tn.text})
			case "call":
				msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": callID(i), "type": "function", "function": map[string]any{"name": tn.text, "arguments": "{}"}}}})
			case "result":
				msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": callID(i - 1), "content": tn.text})
			}
		}
	}
	var tools []any
	for _, tl := range scriptTools {
		schema := map[string]any{"type": "object", "properties": map[string]any{tl.param: map[string]any{"type": "string"}}, "required": []string{tl.param}}
		switch kind {
		case providersim.KindAnthropic:
			tools = append(tools, map[string]any{"name": tl.name, "input_schema": schema})
		case providersim.KindGemini:
			tools = append(tools, map[string]any{"name": tl.name, "parametersJsonSchema": schema})
		default:
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": tl.name, "parameters": schema}})
		}
	}
	switch kind {
	case providersim.KindAnthropic:
		body["model"], body["max_tokens"], body["messages"], body["tools"] = "claude-sonnet-4-5", 256, msgs, tools
		switch choice {
		case "":
		case "none":
			body["tool_choice"] = map[string]any{"type": "none"}
		case "required":
			body["tool_choice"] = map[string]any{"type": "any"}
		default:
			body["tool_choice"] = map[string]any{"type": "tool", "name": choice}
		}
		return call{path: "/v1/messages", header: anthropicHeaders, body: string(mustMarshal(body))}
	case providersim.KindGemini:
		body["contents"], body["tools"] = msgs, []any{map[string]any{"functionDeclarations": tools}}
		switch choice {
		case "":
		case "none":
			body["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "NONE"}}
		case "required":
			body["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY"}}
		default:
			body["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY", "allowedFunctionNames": []string{choice}}}
		}
		return call{path: "/v1beta/models/gemini-2.5-flash:generateContent", body: string(mustMarshal(body))}
	}
	body["model"], body["messages"], body["tools"] = "gpt-4o-mini", msgs, tools
	switch choice {
	case "":
	case "none", "required":
		body["tool_choice"] = choice
	default:
		body["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": choice}}
	}
	return call{path: "/v1/chat/completions", body: string(mustMarshal(body))}
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

var chatKinds = []providersim.Kind{providersim.KindOpenAI, providersim.KindAnthropic, providersim.KindGemini}

// chatModel is the model each kind's chatRequest asks for.
var chatModel = map[providersim.Kind]string{
	providersim.KindOpenAI: "gpt-4o-mini", providersim.KindAnthropic: "claude-sonnet-4-5", providersim.KindGemini: "gemini-2.5-flash",
}

// TestScript checks the scripted rules in every chat dialect: a tool is
// called only when the user's prompt asks for it, once, in order.
func TestScript(t *testing.T) {
	const both = `[[call get_time]] then [[call get_weather {"city": "Oslo"}]]`
	tests := []struct {
		name   string
		turns  []turn
		choice string
		want   outcome // {model} in Text stands for the kind's model
	}{
		{"tools offered, none asked for", []turn{{"user", "What is the weather?"}}, "", outcome{Text: "Hello from {model}: What is the weather?"}},
		{"a directive with arguments", []turn{{"user", `[[call get_time {"zone": "CET"}]]`}}, "", outcome{Tool: "get_time", Args: `{"zone":"CET"}`}},
		{"a directive without arguments", []turn{{"user", "[[call get_weather]]"}}, "", outcome{Tool: "get_weather", Args: `{"city":"x"}`}},
		{"plain words", []turn{{"user", "Please use the get_time tool."}}, "", outcome{Tool: "get_time", Args: `{"zone":"x"}`}},
		{"the asked call's result is answered in text", []turn{{"user", "[[call get_time]]"}, {"call", "get_time"}, {"result", "12:00"}}, "", outcome{Text: "Tool result received: 12:00"}},
		{"the next directive after a result", []turn{{"user", both}, {"call", "get_time"}, {"result", "12:00"}}, "", outcome{Tool: "get_weather", Args: `{"city":"Oslo"}`}},
		{"every directive called", []turn{{"user", both}, {"call", "get_time"}, {"result", "12:00"}, {"call", "get_weather"}, {"result", "rain"}}, "", outcome{Text: "Tool result received: rain"}},
		{"a new prompt asks again", []turn{{"user", "[[call get_time]]"}, {"call", "get_time"}, {"result", "12:00"}, {"assistant", "It is noon."}, {"user", "thanks"}}, "", outcome{Text: "Hello from {model}: thanks"}},
		{"a tool not offered", []turn{{"user", "[[call get_stock]]"}}, "", outcome{Text: "Hello from {model}: [[call get_stock]]"}},
		{"the system prompt is not the user asking", []turn{{"system", "[[call get_time]] and use the get_weather tool"}, {"user", "hi"}}, "", outcome{Text: "Hello from {model}: hi"}},
		{"a forced tool", []turn{{"user", "hi"}}, "get_time", outcome{Tool: "get_time", Args: `{"zone":"x"}`}},
		{"a required call with nothing asked", []turn{{"user", "hi"}}, "required", outcome{Tool: "get_weather", Args: `{"city":"x"}`}},
		{"tool choice none", []turn{{"user", "[[call get_time]]"}}, "none", outcome{Text: "Hello from {model}: [[call get_time]]"}},
		// Claude Code's mid-conversation system turn, translated to Chat
		// Completions, follows its prompt.
		{"a late system message", []turn{{"user", "[[call get_time]]"}, {"system", "Be brief."}}, "", outcome{Tool: "get_time", Args: `{"zone":"x"}`}},
		{"a late system message after a result", []turn{{"user", "[[call get_time]]"}, {"call", "get_time"}, {"result", "12:00"}, {"system", "Be brief."}}, "", outcome{Text: "Tool result received: 12:00"}},
	}
	for _, kind := range chatKinds {
		sim, _ := startSim(t, providersim.ProviderConfig{Kind: kind, Script: true})
		for _, tt := range tests {
			t.Run(string(kind)+"/"+tt.name, func(t *testing.T) {
				resp, body := do(t, sim.URL(string(kind)), chatRequest(kind, tt.turns, tt.choice))
				if resp.StatusCode != 200 {
					t.Fatalf("got status %d: %s", resp.StatusCode, body)
				}
				want := tt.want
				want.Text = strings.ReplaceAll(want.Text, "{model}", chatModel[kind])
				if diff := cmp.Diff(want, replyOutcome(t, kind, body)); diff != "" {
					t.Errorf("reply mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestScriptAnthropicTurns checks how scripted mode reads the turns only
// the Messages API has: text blocks beside system reminders, tool results
// with text, and mid-conversation system messages.
func TestScriptAnthropicTurns(t *testing.T) {
	const tools = `"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},{"name":"get_time","input_schema":{"type":"object"}}]`
	tests := []struct {
		name     string
		messages string
		want     outcome
	}{
		{
			"the directive in any text block, reminders ignored",
			`[{"role":"user","content":[{"type":"text","text":"<system-reminder>\nuse the get_time tool\n</system-reminder>\n"},{"type":"text","text":"[[call get_weather {\"city\":\"Oslo\"}]]"}]},{"role":"system","content":"Environment: linux"}]`,
			outcome{Tool: "get_weather", Args: `{"city":"Oslo"}`},
		},
		{
			"a system turn does not ask",
			`[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"[[call get_time]]"}]}]`,
			outcome{Text: "Hello from claude-sonnet-4-5: hi"},
		},
		{
			"text beside a tool result does not ask",
			`[{"role":"user","content":"[[call get_time]]"},{"role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"get_time","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"12:00"},{"type":"text","text":"[[call get_time]]"}]}]`,
			outcome{Text: "Tool result received: 12:00"},
		},
		{
			"the echo leaves reminders out",
			`[{"role":"user","content":[{"type":"text","text":"<system-reminder>Attribution: add a trailer.</system-reminder>"},{"type":"text","text":"say hi"}]}]`,
			outcome{Text: "Hello from claude-sonnet-4-5: say hi"},
		},
	}
	sim, _ := startSim(t, providersim.ProviderConfig{Kind: providersim.KindAnthropic, Script: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"claude-sonnet-4-5","max_tokens":256,"messages":` + tt.messages + `,` + tools + `}`}
			resp, body := do(t, sim.URL("anthropic"), c)
			if resp.StatusCode != 200 {
				t.Fatalf("got status %d: %s", resp.StatusCode, body)
			}
			if diff := cmp.Diff(tt.want, replyOutcome(t, providersim.KindAnthropic, body)); diff != "" {
				t.Errorf("reply mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJSONMode checks that JSON mode and structured outputs, in each
// dialect's spelling, give reply text that is a JSON object, scripted or
// not.
func TestJSONMode(t *testing.T) {
	const (
		oaPath    = "/v1/chat/completions"
		anPath    = "/v1/messages"
		gmPath    = "/v1beta/models/gemini-2.5-flash:generateContent"
		schema    = `{"type":"object","properties":{"answer":{"type":"string"},"score":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["answer","score","tags"],"additionalProperties":false}`
		oaMsgs    = `"messages":[{"role":"user","content":"Rate this"}]`
		anMsgs    = `"model":"claude-sonnet-4-5","max_tokens":256,"messages":[{"role":"user","content":"Rate this"}]`
		gmContent = `"contents":[{"role":"user","parts":[{"text":"Rate this"}]}]`
	)
	structured := map[string]any{"answer": "x", "score": 1.0, "tags": []any{}}
	tests := []struct {
		name string
		kind providersim.Kind
		call call
		want any
	}{
		{"openai json_object", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"gpt-4o-mini",` + oaMsgs + `,"response_format":{"type":"json_object"}}`}, map[string]any{"reply": "Hello from gpt-4o-mini: Rate this"}},
		{"openai json_schema", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"gpt-4o-mini",` + oaMsgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"rating","strict":true,"schema":` + schema + `}}}`}, structured},
		{"openai text", providersim.KindOpenAI, call{path: oaPath, body: `{"model":"gpt-4o-mini",` + oaMsgs + `,"response_format":{"type":"text"}}`}, nil},
		{"azure json_schema", providersim.KindAzureOpenAI, call{path: "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21", body: `{` + oaMsgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"rating","schema":` + schema + `}}}`}, structured},
		{"anthropic output_config.format", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{` + anMsgs + `,"output_config":{"effort":"low","format":{"type":"json_schema","schema":` + schema + `}}}`}, structured},
		{"anthropic output_format", providersim.KindAnthropic, call{path: anPath, header: anthropicHeaders, body: `{` + anMsgs + `,"output_format":{"type":"json_schema","schema":` + schema + `}}`}, structured},
		{"gemini JSON without a schema", providersim.KindGemini, call{path: gmPath, body: `{` + gmContent + `,"generationConfig":{"responseMimeType":"application/json"}}`}, map[string]any{"reply": "Hello from gemini-2.5-flash: Rate this"}},
		{"gemini responseSchema", providersim.KindGemini, call{path: gmPath, body: `{` + gmContent + `,"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT","properties":{"answer":{"type":"STRING"},"score":{"type":"INTEGER"},"tags":{"type":"ARRAY","items":{"type":"STRING"}}},"required":["answer","score","tags"]}}}`}, structured},
		{"gemini responseJsonSchema", providersim.KindGemini, call{path: gmPath, body: `{` + gmContent + `,"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":` + schema + `}}`}, structured},
	}
	for _, scripted := range []bool{false, true} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/scripted=%v", tt.name, scripted), func(t *testing.T) {
				sim, _ := startSim(t, providersim.ProviderConfig{Kind: tt.kind, Script: scripted})
				resp, body := do(t, sim.URL(string(tt.kind)), tt.call)
				if resp.StatusCode != 200 {
					t.Fatalf("got status %d: %s", resp.StatusCode, body)
				}
				text := replyOutcome(t, tt.kind, body).Text
				if tt.want == nil {
					if json.Valid([]byte(text)) {
						t.Errorf("got JSON %s, want text", text)
					}
					return
				}
				var got any
				if err := json.Unmarshal([]byte(text), &got); err != nil {
					t.Fatalf("reply text %q is not JSON: %v", text, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("JSON reply mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// claudeCodeSayHi is the first request Claude Code 2.1.332 sent for
// `claude -p "say hi"`, among the client fixtures the e2e replays use.
var claudeCodeSayHi = filepath.Join("..", "e2e", "testdata", "clients", "claude-code-2.1.332-say-hi", "000.json")

// recordedRequest is a request as recording mode writes it, and as the
// client fixtures under e2e/testdata/clients hold it.
type recordedRequest struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func readRecorded(t *testing.T, path string) recordedRequest {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r recordedRequest
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// replay sends a recorded request to base, with its headers.
func replay(t *testing.T, base string, r recordedRequest, body []byte) (int, string) {
	t.Helper()
	h := map[string]string{}
	for k, v := range r.Headers {
		if k != "Content-Length" && k != "Connection" && k != "Accept-Encoding" {
			h[k] = v
		}
	}
	resp, got := do(t, base, call{method: r.Method, path: r.Path, header: h, body: string(body)})
	return resp.StatusCode, got
}

// sseOutcome reads a streamed Messages reply.
func sseOutcome(t *testing.T, stream string) outcome {
	t.Helper()
	var o outcome
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string `json:"type"`
			ContentBlock struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		if ev.Type == "content_block_start" && ev.ContentBlock.Type == "tool_use" {
			o.Tool = ev.ContentBlock.Name
		}
		o.Text += ev.Delta.Text
		o.Args += ev.Delta.PartialJSON
	}
	return o
}

// TestClaudeCodeRequest feeds the first request Claude Code 2.1.332 sent
// for `claude -p "say hi"` (its default tools, Agent first; a system turn
// in messages; adaptive thinking, effort, context management) to the
// Anthropic simulator. Scripted, it says hi; unscripted it calls Agent,
// which is how one "say hi" once spawned a hundred sub-agents.
func TestClaudeCodeRequest(t *testing.T) {
	r := readRecorded(t, claudeCodeSayHi)
	tests := []struct {
		script bool
		want   outcome
	}{
		{true, outcome{Text: "Hello from claude-opus-5-5: say hi"}},
		{false, outcome{Tool: "Agent", Args: `{"description":"x","prompt":"x"}`}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("scripted=%v", tt.script), func(t *testing.T) {
			sim, _ := startSim(t, providersim.ProviderConfig{Kind: providersim.KindAnthropic, Script: tt.script})
			status, body := replay(t, sim.URL("anthropic"), r, r.Body)
			if status != 200 {
				t.Fatalf("got status %d: %s", status, body)
			}
			if diff := cmp.Diff(tt.want, sseOutcome(t, body)); diff != "" {
				t.Errorf("streamed reply mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScriptedSessionEnds runs Claude Code's request as an agent loop
// would: each tool call is answered and the conversation sent again. A
// prompt naming two tools gets two calls and then a text answer.
func TestScriptedSessionEnds(t *testing.T) {
	r := readRecorded(t, claudeCodeSayHi)
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	body["stream"] = false
	msgs := body["messages"].([]any)
	first := msgs[0].(map[string]any)["content"].([]any)
	first[len(first)-1] = map[string]any{"type": "text", "text": `Read [[call Read {"file_path":"notes.txt"}]] then [[call Bash {"command":"ls"}]]`}
	sim, _ := startSim(t, providersim.ProviderConfig{Kind: providersim.KindAnthropic, Script: true})
	var calls []string
	for range 10 {
		status, got := replay(t, sim.URL("anthropic"), r, mustMarshal(body))
		if status != 200 {
			t.Fatalf("request %d: got status %d: %s", len(calls)+1, status, got)
		}
		var m struct {
			Content    []map[string]any `json:"content"`
			StopReason string           `json:"stop_reason"`
		}
		if err := json.Unmarshal([]byte(got), &m); err != nil {
			t.Fatal(err)
		}
		if m.StopReason != "tool_use" {
			if want := "Tool result received: notes.txt ls output"; m.Content[0]["text"] != want {
				t.Errorf("final answer %v, want %q", m.Content, want)
			}
			break
		}
		use := m.Content[0]
		calls = append(calls, fmt.Sprintf("%s %s", use["name"], mustMarshal(use["input"])))
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": m.Content},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": use["id"], "content": "notes.txt ls output"}}},
		)
		body["messages"] = msgs
	}
	want := []string{`Read {"file_path":"notes.txt"}`, `Bash {"command":"ls"}`}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("tool calls mismatch (-want +got):\n%s", diff)
	}
}

// TestScriptResponses: the Responses endpoint follows the scripted rules
// too: Codex offers many tools and calls none unless asked; a call asked
// for is made once; a text format is honoured.
// additionalTools is an input item offering tools as Codex's default
// model gets them: a namespace of a custom tool and a function.
const additionalTools = `{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec","format":{"type":"grammar"}},{"type":"function","name":"wait","parameters":{"type":"object"}}]}]}`

func TestScriptResponses(t *testing.T) {
	const tools = `"tools":[{"type":"function","name":"spawn_agent","parameters":{"type":"object"}},{"type":"namespace","name":"ns","tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}]}]`
	tests := []struct {
		name, input, extra string
		want               outcome
	}{
		{"nothing asked: text, not the first tool", `[{"role":"user","content":"say hi"}]`, "", outcome{Text: "Hello from gpt-4o-mini: say hi"}},
		{"a call asked for", `[{"role":"user","content":"[[call exec_command {\"cmd\":\"ls\"}]]"}]`, "", outcome{Tool: "exec_command", Args: `{"cmd":"ls"}`}},
		{"a late developer message", `[{"role":"user","content":"[[call exec_command {\"cmd\":\"ls\"}]]"},{"role":"developer","content":"Be brief."}]`, "", outcome{Tool: "exec_command", Args: `{"cmd":"ls"}`}},
		{"the call made: text", `[{"role":"user","content":"[[call exec_command {\"cmd\":\"ls\"}]]"},{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},{"type":"function_call_output","call_id":"c1","output":"a.txt"}]`, "", outcome{Text: "Tool result received: a.txt"}},
		{"a JSON format", `[{"role":"user","content":"say hi"}]`, `,"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}`, outcome{Text: `{"ok":true}`}},
		// Codex's default model gets its tools in an additional_tools input
		// item, its main tool a custom one, called with text.
		{"a custom tool offered in the input", `[` + additionalTools + `,{"role":"user","content":"[[call exec {\"input\":\"await tools.exec_command({cmd: 'ls'})\"}]]"}]`, "", outcome{Tool: "exec", Args: "await tools.exec_command({cmd: 'ls'})"}},
		{"its output answered", `[` + additionalTools + `,{"role":"user","content":"[[call exec {\"input\":\"x\"}]]"},{"type":"custom_tool_call","call_id":"c1","name":"exec","input":"x"},{"type":"custom_tool_call_output","call_id":"c1","output":"a.txt"}]`, "", outcome{Text: "Tool result received: a.txt"}},
	}
	sim, _ := startSim(t, providersim.ProviderConfig{Kind: providersim.KindOpenAI, Script: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, sim.URL("openai"), call{path: "/v1/responses", header: map[string]string{"Authorization": "Bearer k"},
				body: `{"model":"gpt-4o-mini","input":` + tt.input + `,` + tools + tt.extra + `}`})
			if resp.StatusCode != 200 {
				t.Fatalf("got status %d: %s", resp.StatusCode, body)
			}
			var r struct {
				Output []struct {
					Type      string `json:"type"`
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
					Input     string `json:"input"`
					Content   []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"output"`
			}
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatal(err)
			}
			var got outcome
			for _, o := range r.Output {
				for _, c := range o.Content {
					got.Text += c.Text
				}
				switch o.Type {
				case "function_call":
					got.Tool, got.Args = o.Name, o.Arguments
				case "custom_tool_call":
					got.Tool, got.Args = o.Name, o.Input
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reply mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScriptChatSystemAfterThePrompt: a system message after the user's
// prompt (Claude Code's environment turn, translated to chat) only
// instructs: the prompt's call is still made.
func TestScriptChatSystemAfterThePrompt(t *testing.T) {
	sim, _ := startSim(t, providersim.ProviderConfig{Kind: providersim.KindOpenAI, Script: true})
	resp, body := do(t, sim.URL("openai"), call{path: "/v1/chat/completions", header: map[string]string{"Authorization": "Bearer k"},
		body: `{"model":"gpt-4o-mini","messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"[[call Read {\"file_path\":\"a\"}]]"}]},{"role":"system","content":"Environment: linux"}],
		"tools":[{"type":"function","function":{"name":"Agent","parameters":{"type":"object"}}},{"type":"function","function":{"name":"Read","parameters":{"type":"object"}}}]}`})
	if resp.StatusCode != 200 {
		t.Fatalf("got status %d: %s", resp.StatusCode, body)
	}
	if diff := cmp.Diff(outcome{Tool: "Read", Args: `{"file_path":"a"}`}, replyOutcome(t, providersim.KindOpenAI, body)); diff != "" {
		t.Errorf("reply mismatch (-want +got):\n%s", diff)
	}
}
