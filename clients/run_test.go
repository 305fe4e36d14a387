package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentsPassed(t *testing.T) {
	const claudeOK = `{"type":"result","is_error":false,"api_error_status":null,"num_turns":2,"result":"Tool result received: 1 the answer is 42 2 <system-reminder>"}`
	tests := []struct {
		name           string
		pass           func(*workspace, string, string) error
		stdout, stderr string
		wantErr        string
	}{
		{name: "claude: the Read result answered", pass: claudeCodePassed, stdout: "noise\n" + claudeOK + "\n"},
		{name: "claude: an error", pass: claudeCodePassed, stdout: `{"is_error":true,"api_error_status":404,"result":"There's an issue with the selected model"}`,
			wantErr: "is_error, api_error_status 404: There's an issue with the selected model"},
		{name: "claude: no tool result", pass: claudeCodePassed, stdout: `{"is_error":false,"result":"Hello from gpt-4o-mini: Read the notes"}`, wantErr: "does not answer the Read tool's result"},
		{name: "claude: no JSON", pass: claudeCodePassed, stdout: "Error: bad flag", wantErr: "no JSON result"},
		{name: "codex: the command's output came back", pass: codexPassed, stdout: "Tool result received: Chunk ID: 80de52\n", stderr: "exec\ncat notes.txt\nthe answer is 42\n"},
		{name: "codex: text only", pass: codexPassed, stdout: "Hello from gpt-4o-mini: Show the notes", wantErr: "does not answer a tool result"},
		{name: "codex: no command output", pass: codexPassed, stdout: "Tool result received: error", stderr: "exec failed", wantErr: "does not show the shell command's output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.pass(nil, tt.stdout, tt.stderr)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	tests := []struct{ stdout, stderr, want string }{
		{"tool: ok", "Traceback...\nAssertionError: x\nFAIL: stream: AssertionError: got 'a'\n", "stream: AssertionError: got 'a'"},
		{"", "warning: a\nERROR: the model 'gpt-6.2-sol' does not exist\n", "ERROR: the model 'gpt-6.2-sol' does not exist"},
		{"only stdout\n", "", "only stdout"},
		{"", "", "no output"},
	}
	for _, tt := range tests {
		if got := failure(tt.stdout, tt.stderr); got != tt.want {
			t.Errorf("failure(%q, %q) = %q, want %q", tt.stdout, tt.stderr, got, tt.want)
		}
	}
}

func TestCodexConfig(t *testing.T) {
	w := &workspace{baseURL: "http://127.0.0.1:1234", model: "gpt-4o-mini"}
	want := "model = \"gpt-4o-mini\"\nmodel_provider = \"gateway\"\n\n[model_providers.gateway]\nname = \"Gateway\"\nbase_url = \"http://127.0.0.1:1234/v1\"\nenv_key = \"GATEWAY_API_KEY\"\nwire_api = \"responses\"\n"
	if got := w.codexConfig(); got != want {
		t.Errorf("config.toml:\n%s\nwant:\n%s", got, want)
	}
	w.model = ""
	if got := w.codexConfig(); strings.Contains(got, "model =") {
		t.Errorf("with the default model, config.toml names one:\n%s", got)
	}
}

func TestPkgVersion(t *testing.T) {
	tools := t.TempDir()
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tools, "node_modules", "@openai", "codex", "package.json"), `{"name":"@openai/codex","version":"0.171.0"}`)
	write(filepath.Join(tools, "venv", "lib", "python3.11", "site-packages", "langchain_openai-1.8.1.dist-info", "METADATA"), "")
	tests := []struct {
		pkg     pkg
		want    string
		wantErr bool
	}{
		{pkg{npm: "@openai/codex"}, "0.171.0", false},
		{pkg{pypi: "langchain-openai"}, "1.8.1", false},
		{pkg{npm: "ai"}, "", true},
		{pkg{pypi: "openai"}, "", true},
	}
	for _, tt := range tests {
		got, err := tt.pkg.version(tools)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%+v: version %q, %v; want %q (error %v)", tt.pkg, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestWithoutScratch(t *testing.T) {
	const scratch = "/tmp/switchyard-capture-558066227"
	tests := []struct{ name, in, want string }{
		{"a path", `{"cwd":"/tmp/switchyard-capture-558066227/1/work"}`, `{"cwd":"/capture/1/work"}`},
		{"a project slug", `"-tmp-switchyard-capture-558066227-1-work/memory"`, `"-capture-1-work/memory"`},
		{"nothing of it", `{"a":"/tmp/other"}`, `{"a":"/tmp/other"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(withoutScratch([]byte(tt.in), scratch)); got != tt.want {
				t.Errorf("withoutScratch(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}
