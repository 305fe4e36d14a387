package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchyard/switchyard/configs/policy"
)

// A client is one real client the matrix runs, as a user would: its
// natural API with its default settings but the base URL, key and model.
type client struct {
	name string // as the matrix names it
	// slug names its fixtures (e2e/testdata/clients/<slug>-<version>).
	slug string
	pkg  pkg
	api  policy.API
	// agent: the client runs a task of its own (a multi-turn session with
	// its default tools) and is run with its default model too.
	agent bool
	// captureModel is the model its capture runs with; empty: its default
	// (an agent's) or captureModels' (an SDK's).
	captureModel string
	// command is the command line, run in w.dir with w's environment.
	command func(w *workspace) []string
	// pass judges a run that exited 0 (any other exit fails it); nil: the
	// exit status says it all (the scripts check their own answers).
	pass func(w *workspace, stdout, stderr string) error
	// why says why a run that exited non-zero failed; nil: the scripts'
	// FAIL line, else the last line of stderr.
	why func(stdout, stderr string) string
}

// pkg is the installed package whose version names a client.
type pkg struct {
	npm, pypi string // one of the two
}

// version reads the installed version of p under tools (.clients).
func (p pkg) version(tools string) (string, error) {
	if p.npm != "" {
		b, err := os.ReadFile(filepath.Join(tools, "node_modules", p.npm, "package.json"))
		if err != nil {
			return "", err
		}
		var m struct{ Version string }
		if err := json.Unmarshal(b, &m); err != nil || m.Version == "" {
			return "", fmt.Errorf("%s: no version in its package.json", p.npm)
		}
		return m.Version, nil
	}
	// A wheel installs <name>-<version>.dist-info, its name normalised
	// with underscores.
	name := strings.ReplaceAll(p.pypi, "-", "_")
	found, _ := filepath.Glob(filepath.Join(tools, "venv", "lib", "python*", "site-packages", name+"-*.dist-info"))
	if len(found) != 1 {
		return "", fmt.Errorf("%s is not installed in %s/venv (found %v)", p.pypi, tools, found)
	}
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(found[0]), name+"-"), ".dist-info"), nil
}

// notes is the file the agents are asked to read; its text in their answer
// (or transcript) proves the tool ran and its result came back.
const (
	notesFile = "notes.txt"
	notesText = "the answer is 42"
)

// answered is how the scripted simulator answers a tool result.
const answered = "Tool result received:"

// clients is every client make clients runs. Each SDK script (clients/js,
// clients/py) makes a tool round trip and a stream and checks both.
var clients = []client{
	{
		name: "Claude Code", slug: "claude-code", pkg: pkg{npm: "@anthropic-ai/claude-code"}, api: policy.APIMessages, agent: true,
		command: func(w *workspace) []string {
			args := []string{w.bin("claude"), "-p", w.prompt(`Read the notes: [[call Read {"file_path":%q}]]`, filepath.Join(w.dir, notesFile)),
				"--output-format", "json", "--max-turns", "5"}
			if w.model != "" {
				args = append(args, "--model", w.model)
			}
			return args
		},
		pass: claudeCodePassed,
		why: func(stdout, stderr string) string {
			if err := claudeCodePassed(nil, stdout, stderr); err != nil && json.Valid([]byte(lastLine(stdout))) {
				return err.Error()
			}
			return failure(stdout, stderr)
		},
	},
	{
		name: "Codex CLI", slug: "codex", pkg: pkg{npm: "@openai/codex"}, api: policy.APIResponses, agent: true,
		// With its default model (gpt-6.2-sol) Codex 0.171 works in code
		// mode: no tools member, its tools in an additional_tools input
		// item, the shell behind a custom exec tool that runs JavaScript
		// calling tools.exec_command. The prompt asks for the shell both
		// ways; the simulator calls the one offered. The capture names a
		// model of the classic shape, which the translations serve too.
		captureModel: "gpt-4o-mini",
		command: func(w *workspace) []string {
			return []string{w.bin("codex"), "exec", "--skip-git-repo-check", "-s", "read-only",
				w.prompt(`Show the notes: [[call exec_command {"cmd":%q}]] [[call exec {"input":%q}]]`,
					"cat "+notesFile, `text(JSON.stringify(await tools.exec_command({cmd: "cat `+notesFile+`"})))`)}
		},
		pass: codexPassed,
	},
	nodeScript("Vercel AI SDK, OpenAI chat", "vercel-ai-openai-chat", "ai", policy.APIChatCompletions, "vercel-ai.mjs", "openai-chat"),
	nodeScript("Vercel AI SDK, OpenAI responses", "vercel-ai-openai-responses", "ai", policy.APIResponses, "vercel-ai.mjs", "openai-responses"),
	nodeScript("Vercel AI SDK, Anthropic", "vercel-ai-anthropic", "ai", policy.APIMessages, "vercel-ai.mjs", "anthropic"),
	nodeScript("LangChain JS ChatOpenAI", "langchain-js", "@langchain/openai", policy.APIChatCompletions, "langchain.mjs"),
	pythonScript("LangChain Python ChatOpenAI", "langchain-py", "langchain-openai", policy.APIChatCompletions, "langchain_chat.py"),
	pythonScript("OpenAI Agents SDK, Responses model", "openai-agents-responses", "openai-agents", policy.APIResponses, "openai_agents.py", "responses"),
	pythonScript("OpenAI Agents SDK, Chat Completions model", "openai-agents-chat", "openai-agents", policy.APIChatCompletions, "openai_agents.py", "chat"),
	nodeScript("Anthropic SDK (TypeScript)", "anthropic-sdk-js", "@anthropic-ai/sdk", policy.APIMessages, "anthropic-sdk.mjs"),
	pythonScript("Anthropic SDK (Python)", "anthropic-sdk-py", "anthropic", policy.APIMessages, "anthropic_sdk.py"),
	nodeScript("OpenAI SDK (TypeScript)", "openai-sdk-js", "openai", policy.APIChatCompletions, "openai-sdk.mjs"),
	pythonScript("OpenAI SDK (Python)", "openai-sdk-py", "openai", policy.APIChatCompletions, "openai_sdk.py"),
}

func nodeScript(name, slug, npm string, api policy.API, script string, args ...string) client {
	return client{name: name, slug: slug, pkg: pkg{npm: npm}, api: api, command: func(w *workspace) []string {
		return append([]string{w.bin("node"), filepath.Join(w.src, "js", script)}, args...)
	}}
}

func pythonScript(name, slug, dist string, api policy.API, script string, args ...string) client {
	return client{name: name, slug: slug, pkg: pkg{pypi: dist}, api: api, command: func(w *workspace) []string {
		return append([]string{filepath.Join(w.tools, "venv", "bin", "python"), filepath.Join(w.src, "py", script)}, args...)
	}}
}

// claudeCodePassed: the session ended without error, and its result is
// the model's answer to the Read tool's result, the notes in it (to a
// plain prompt, any answer).
func claudeCodePassed(w *workspace, stdout, _ string) error {
	var r struct {
		IsError        bool   `json:"is_error"`
		APIErrorStatus any    `json:"api_error_status"`
		Result         string `json:"result"`
		NumTurns       int    `json:"num_turns"`
	}
	if err := json.Unmarshal([]byte(lastLine(stdout)), &r); err != nil {
		return fmt.Errorf("no JSON result on stdout: %v", err)
	}
	switch {
	case r.IsError:
		return fmt.Errorf("is_error, api_error_status %v: %s", r.APIErrorStatus, oneLine(r.Result, 300))
	case w != nil && w.say != "":
	case !strings.Contains(r.Result, answered) || !strings.Contains(r.Result, notesText):
		return fmt.Errorf("the result %q does not answer the Read tool's result", oneLine(r.Result, 300))
	}
	return nil
}

// codexPassed: the final message (stdout) answers a tool result, and the
// transcript (stderr) shows the command's output, the notes. The
// simulated answer quotes only the result's first 40 characters, which
// Codex fills with its own header (Chunk ID, Wall time). To a plain
// prompt, any answer passes.
func codexPassed(w *workspace, stdout, stderr string) error {
	if w != nil && w.say != "" {
		return nil
	}
	if !strings.Contains(stdout, answered) {
		return fmt.Errorf("the final message %q does not answer a tool result", oneLine(stdout, 300))
	}
	if !strings.Contains(stderr, notesText) {
		return errors.New("the transcript does not show the shell command's output")
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// oneLine is s on one line, at most n bytes of it.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
