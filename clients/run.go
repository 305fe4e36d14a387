package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A workspace is where one client runs: a scratch working directory with
// the notes the agents read, and a home of its own, so that neither the
// user's configuration nor an earlier run changes what the client sends.
type workspace struct {
	root  string // holds the rest, and run.log
	src   string // clients/ in the repository (the scripts)
	tools string // where make clients installed the clients (.clients)
	dir   string // the working directory
	home  string // HOME, and the agents' configuration folders
	// baseURL (no /v1), key and model (empty: the client's default) are
	// all a run changes of the client's defaults.
	baseURL, key, model string
	// say, when set, is the prompt instead of the task's (a capture of an
	// agent's plain "say hi").
	say string
}

// newWorkspace makes the folders under root and the agents' configuration:
// Codex's custom provider (the only way to give it a base URL).
func newWorkspace(root, src, tools, baseURL, key, model string) (*workspace, error) {
	w := &workspace{root: root, src: src, tools: tools, dir: filepath.Join(root, "work"), home: filepath.Join(root, "home"), baseURL: baseURL, key: key, model: model}
	for _, d := range []string{w.dir, filepath.Join(w.home, ".claude"), filepath.Join(w.home, ".codex")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(w.dir, notesFile), []byte(notesText+"\n"), 0o644); err != nil {
		return nil, err
	}
	return w, os.WriteFile(filepath.Join(w.home, ".codex", "config.toml"), []byte(w.codexConfig()), 0o644)
}

// codexConfig is Codex's config.toml: the gateway as a custom provider of
// the Responses API (the only wire API Codex 0.17x speaks), its key read
// from GATEWAY_API_KEY. Without a model Codex uses its default.
func (w *workspace) codexConfig() string {
	var b strings.Builder
	if w.model != "" {
		fmt.Fprintf(&b, "model = %q\n", w.model)
	}
	fmt.Fprintf(&b, "model_provider = \"gateway\"\n\n[model_providers.gateway]\nname = \"Gateway\"\nbase_url = %q\nenv_key = \"GATEWAY_API_KEY\"\nwire_api = \"responses\"\n", w.baseURL+"/v1")
	return b.String()
}

func (w *workspace) bin(name string) string {
	return filepath.Join(w.tools, "node_modules", ".bin", name)
}

func (w *workspace) prompt(format string, args ...any) string {
	if w.say != "" {
		return w.say
	}
	return fmt.Sprintf(format, args...)
}

// env is the clients' environment: the caller's, less every variable that
// would point a client elsewhere or change its defaults, plus the base
// URL and key in each client's own variables, Node 22 first on PATH, and
// Claude Code's switches for running offline (no telemetry, error
// reports or updates).
func (w *workspace) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !clientVariable(name) && name != "HOME" && name != "PATH" {
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+w.home,
		"PATH="+filepath.Join(w.tools, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CLIENT_BASE_URL="+w.baseURL, "CLIENT_API_KEY="+w.key, "CLIENT_MODEL="+w.model,
		"ANTHROPIC_BASE_URL="+w.baseURL, "ANTHROPIC_API_KEY="+w.key, "CLAUDE_CONFIG_DIR="+filepath.Join(w.home, ".claude"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1",
		"CODEX_HOME="+filepath.Join(w.home, ".codex"), "GATEWAY_API_KEY="+w.key,
	)
}

// clientVariable reports whether an environment variable configures a
// client or its provider (keys, base URLs, tracing).
func clientVariable(name string) bool {
	for _, p := range []string{"ANTHROPIC_", "OPENAI_", "CLAUDE_", "CODEX_", "GEMINI_", "GOOGLE_", "LANGCHAIN_", "LANGSMITH_", "AI_SDK_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// run runs c in w, killing it (and every process it started) after
// timeout, and judges the run.
func run(ctx context.Context, c client, w *workspace, timeout time.Duration) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := c.command(w)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = w.dir, w.env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Its own process group, so that a timeout ends the shells and
	// helpers an agent started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	stdout, stderr = out.String(), errOut.String()
	why := failure
	if c.why != nil {
		why = c.why
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return stdout, stderr, fmt.Errorf("no answer within %v: %s", timeout, why(stdout, stderr))
	case err != nil:
		return stdout, stderr, fmt.Errorf("%v: %s", err, why(stdout, stderr))
	case c.pass != nil:
		return stdout, stderr, c.pass(w, stdout, stderr)
	}
	return stdout, stderr, nil
}

// failure is what a failed run said about why: the scripts' FAIL line,
// else the last line of stderr (or stdout).
func failure(stdout, stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if msg, ok := strings.CutPrefix(lines[i], "FAIL: "); ok {
			return oneLine(msg, 400)
		}
	}
	if s := strings.TrimSpace(stderr); s != "" {
		return oneLine(lastLine(s), 400)
	}
	if s := strings.TrimSpace(stdout); s != "" {
		return oneLine(lastLine(s), 400)
	}
	return "no output"
}
