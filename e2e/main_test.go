package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/stack"
)

// shared is the stack most tests use; tests that edit the policy or kill
// processes start their own.
var shared *stack.Stack

// cleanups run after every test: stacks shared by a group of tests.
var cleanups []func()

// sharedStacks are the stacks shared by a group of tests, whose logs are
// checked for secrets once every test has run.
var sharedStacks []*stack.Stack

// secretPatterns match every secret the tests use: virtual keys (the local
// ones, and the sk-sy- keys the admin API issues), the admin key and the
// provider keys of the all-kinds policy. None may ever reach a log.
var secretPatterns = regexp.MustCompile(`sk-local-(demo|team|admin)|sk-sy-[A-Za-z0-9_-]{16,}|sk-e2e-openai|az-e2e-key|compat-e2e-key|sk-ant-e2e|gem-e2e-key`)

// secretsInLogs returns "file: line" for every log line of a stack that
// holds a secret.
func secretsInLogs(s *stack.Stack) []string {
	var leaks []string
	logs, _ := filepath.Glob(filepath.Join(s.Dir, "*.log"))
	for _, name := range logs {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if m := secretPatterns.FindString(line); m != "" {
				leaks = append(leaks, filepath.Base(name)+": "+m+" in "+truncate(line, 200))
			}
		}
	}
	return leaks
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

const demoKey = "sk-local-demo"

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped with -short (make test runs them)")
		os.Exit(0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := stack.Start(ctx, stack.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the gateway:", err)
		os.Exit(1)
	}
	shared = s
	code := m.Run()
	for _, st := range append([]*stack.Stack{s}, sharedStacks...) {
		if leaks := secretsInLogs(st); len(leaks) > 0 {
			fmt.Fprintf(os.Stderr, "e2e: secrets in the logs of %s:\n  %s\n", st.Dir, strings.Join(leaks, "\n  "))
			code = 1
		}
	}
	for _, c := range cleanups {
		c()
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: logs kept in %s\n", s.Dir)
	}
	s.Close()
	if code == 0 {
		_ = os.RemoveAll(s.Dir)
	}
	os.Exit(code)
}

// client returns an official OpenAI SDK client for the stack, with SDK
// retries off so every test sees the gateway's first answer.
func client(s *stack.Stack, key string, opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(s.URL + "/v1/"),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(30 * time.Second),
	}
	return openai.NewClient(append(base, opts...)...)
}

func startStack(t *testing.T, o stack.Options) *stack.Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatalf("starting the gateway: %v", err)
	}
	t.Cleanup(func() {
		for _, leak := range secretsInLogs(s) {
			t.Errorf("secret in the logs: %s", leak)
		}
		if t.Failed() {
			t.Logf("logs kept in %s", s.Dir)
		}
		s.Close()
		if !t.Failed() {
			_ = os.RemoveAll(s.Dir)
		}
	})
	return s
}
