package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/e2e/harness"
)

// shared is the stack most tests use; tests that edit the policy or kill
// processes start their own.
var shared *harness.Stack

// cleanups run after every test: stacks shared by a group of tests.
var cleanups []func()

const demoKey = "sk-local-demo"

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped with -short (make test runs them)")
		os.Exit(0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := harness.Start(ctx, harness.Options{})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the gateway:", err)
		os.Exit(1)
	}
	shared = s
	code := m.Run()
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
func client(s *harness.Stack, key string, opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(s.URL + "/v1/"),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(30 * time.Second),
	}
	return openai.NewClient(append(base, opts...)...)
}

func startStack(t *testing.T, o harness.Options) *harness.Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := harness.Start(ctx, o)
	if err != nil {
		t.Fatalf("starting the gateway: %v", err)
	}
	t.Cleanup(func() {
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
