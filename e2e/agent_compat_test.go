package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sendMessageTool is shaped like Claude Code's SendMessage: a string that
// must match two patterns (zod's .regex().regex() gives allOf).
const sendMessageTool = `{"type":"function","function":{"name":"SendMessage","description":"Send a message to another agent.","parameters":{
	"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,"required":["to","message"],
	"properties":{"to":{"type":"string","allOf":[{"pattern":"^[A-Za-z0-9_-]+$"},{"pattern":"^(?!main$)"}]},"message":{"type":"string"}}}}}`

// agentTools is every tool schema a captured agent request sends by
// default (translator/gemini/testdata/schemas), as OpenAI function tools.
func agentTools(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tools []struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	out := []string{sendMessageTool}
	for _, tool := range tools {
		// Codex's namespace tools are named "ns.tool"; OpenAI names allow
		// no dot.
		fn, _ := json.Marshal(map[string]any{"name": strings.ReplaceAll(tool.Name, ".", "__"), "parameters": tool.Parameters})
		out = append(out, `{"type":"function","function":`+string(fn)+`}`)
	}
	return out
}

// TestAgentToolSchemasEveryKind sends Claude Code's and Codex's default
// tool sets, plus a SendMessage-like allOf of two patterns, to every
// provider kind. The Gemini simulator refuses a function schema the real
// API would refuse, so a 200 from gem-chat proves the translation yields
// what Gemini takes.
func TestAgentToolSchemasEveryKind(t *testing.T) {
	s := allKinds(t)
	files, err := filepath.Glob("../translator/gemini/testdata/schemas/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	forEachKind(t, func(t *testing.T, model, _ string) {
		for _, f := range files {
			body := `{"model":"` + model + `","messages":[{"role":"user","content":"Tell the reviewer the tests pass."}],"tools":[` + strings.Join(agentTools(t, f), ",") + `],"tool_choice":{"type":"function","function":{"name":"SendMessage"}}}`
			status, _, got := post(t, s, demoKey, body)
			if status != 200 {
				t.Fatalf("%s: got %d %s, want 200", filepath.Base(f), status, got)
			}
			var cc struct {
				Choices []struct {
					Message struct {
						ToolCalls []struct {
							Function struct{ Name, Arguments string } `json:"function"`
						} `json:"tool_calls"`
					} `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(got, &cc); err != nil || len(cc.Choices) != 1 || len(cc.Choices[0].Message.ToolCalls) != 1 {
				t.Fatalf("%s: got %s, want one tool call", filepath.Base(f), got)
			}
			if call := cc.Choices[0].Message.ToolCalls[0].Function; call.Name != "SendMessage" || !strings.Contains(call.Arguments, `"to"`) {
				t.Errorf("%s: got call %+v, want SendMessage with its required arguments", filepath.Base(f), call)
			}
		}
	})
}

// TestMidConversationSystemEveryKind: system and developer messages after
// the conversation began (a mode change after a tool result, a reminder
// before the last turn) are accepted by every provider kind, and where the
// gateway translates they stay in place: the simulators answer the last
// user turn, which for Anthropic and Gemini now holds the late reminder.
func TestMidConversationSystemEveryKind(t *testing.T) {
	s := allKinds(t)
	forEachKind(t, func(t *testing.T, model, provider string) {
		body := `{"model":"` + model + `","messages":[
			{"role":"system","content":"You are a coding agent."},
			{"role":"user","content":"List the files."},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_ls1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]},
			{"role":"tool","tool_call_id":"call_ls1","content":"README.md"},
			{"role":"system","content":"The user switched to plan mode."},
			{"role":"user","content":"Plan the refactor."},
			{"role":"assistant","content":"Here is the plan."},
			{"role":"developer","content":"Be brief."}],
			"tools":[{"type":"function","function":{"name":"Bash","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}],
			"tool_choice":"none"}`
		status, _, got := post(t, s, demoKey, body)
		want := "Plan the refactor." // OpenAI protocols take system messages anywhere
		if provider == "anth" || provider == "gem" {
			want = "Be brief."
		}
		if status != 200 || !strings.Contains(string(got), want) {
			t.Fatalf("got %d %s, want a 200 answer to %q", status, got, want)
		}
	})
}
