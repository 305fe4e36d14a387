package providersim_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/providersim"
)

// fixedNow is the simulator clock in tests, so timestamps are stable.
var fixedNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// sleepRecorder replaces real waiting: it records each requested delay and
// returns at once, so fault tests neither wait nor measure time.
type sleepRecorder struct {
	mu  sync.Mutex
	got []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, d)
	return ctx.Err()
}

func (s *sleepRecorder) delays() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.got...)
}

// startSim starts a simulator with one provider per config, a control
// listener, the fixed clock and a sleep recorder, closed when t ends.
func startSim(t *testing.T, providers ...providersim.ProviderConfig) (*providersim.Sim, *sleepRecorder) {
	t.Helper()
	rec := &sleepRecorder{}
	for i := range providers {
		if providers[i].Name == "" {
			providers[i].Name = string(providers[i].Kind)
		}
	}
	sim, err := providersim.Start(t.Context(), providersim.Config{
		Providers:   providers,
		ControlAddr: "127.0.0.1:0",
		Now:         func() time.Time { return fixedNow },
		Sleep:       rec.sleep,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sim.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sim, rec
}

// startKind starts a simulator with a single provider named after kind.
func startKind(t *testing.T, kind providersim.Kind) (*providersim.Sim, *sleepRecorder) {
	t.Helper()
	return startSim(t, providersim.ProviderConfig{Kind: kind})
}

// call is one raw HTTP request to a simulated provider.
type call struct {
	method string // POST when empty
	path   string
	header map[string]string
	body   string
}

// do sends c to base and returns the response with its body read. A
// transport error fails the test.
func do(t *testing.T, base string, c call) (*http.Response, string) {
	t.Helper()
	resp, body, err := tryDo(t, base, c)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	return resp, body
}

// tryDo is do for requests that are expected to fail in transport.
func tryDo(t *testing.T, base string, c call) (*http.Response, string, error) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+c.path, body)
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	// A fresh transport per call keeps a cut or refused connection from
	// leaking into the next request through the pool.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// anthropicHeaders are the headers every Anthropic request needs.
var anthropicHeaders = map[string]string{"anthropic-version": "2023-06-01"}
