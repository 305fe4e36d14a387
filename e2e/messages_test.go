package e2e

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/providersim"
)

const messageMetric = "switchyard_extproc_message_duration_seconds_count"

// TestExtProcMessagesPerRequest counts, from ext_proc's per-message
// metrics, the ext_proc messages Envoy sends for each kind of request, so a
// change that asks Envoy for more fails here. The request-blocking messages
// are the router level's four (request headers and body, response headers
// and body) and one per retried attempt (its request headers): the first
// attempt is translated in the reply to the request body and skips the
// per-attempt filter. How an attempt ended comes with the answer or, for a
// retried one, in Envoy's attempt log (phase attempt_log), which blocks no
// request.
func TestExtProcMessagesPerRequest(t *testing.T) {
	s := fallbacks(t)
	metrics := s.Replicas[0].ExtProcMetrics + "/metrics"
	count := func(match ...string) float64 {
		v, err := harness.MetricSum(metrics, messageMetric, match...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	blocking := func() float64 { return count() - count(`phase="attempt_log"`) }
	post := func(key, body string) (int, int) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		events := 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				events++
			}
		}
		return resp.StatusCode, events
	}
	chat := func(model string, stream bool) string {
		s := `{"model":"` + model + `","max_tokens":16,"messages":[{"role":"user","content":"count the messages"}]`
		if stream {
			s += `,"stream":true`
		}
		return s + "}"
	}

	tests := []struct {
		name   string
		key    string
		body   string
		fault  string // provider made to answer 503
		status int
		// want is the exact number of blocking messages; for a stream,
		// the router level's three before the body plus one per body
		// chunk, at most one chunk per event (and the end).
		want      int
		stream    bool
		attemptLg int // attempt-log entries expected (non-blocking)
	}{
		{name: "same protocol", key: "sk-local-demo", body: chat("gpt-4o-mini", false), status: 200, want: 4},
		{name: "translated", key: "sk-local-demo", body: chat("claude-3-5-haiku", false), status: 200, want: 4},
		{name: "streamed", key: "sk-local-demo", body: chat("gpt-4o-mini", true), status: 200, stream: true},
		{name: "streamed translated", key: "sk-local-demo", body: chat("claude-3-5-haiku", true), status: 200, stream: true},
		{name: "retried on another provider", key: "sk-local-demo", body: chat("gpt-4o-mini", false), fault: "openai", status: 200, want: 5, attemptLg: 1},
		{name: "refused: unknown key", key: "sk-not-a-key", body: chat("gpt-4o-mini", false), status: 401, want: 1},
		{name: "refused: unknown model", key: "sk-local-demo", body: chat("gpt-9-ultra", false), status: 404, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fault != "" {
				if err := s.Sim.SetFault(tt.fault, providersim.Fault{Mode: providersim.FaultDown503}); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = s.Sim.ClearFault(tt.fault) }()
			}
			before, logsBefore := blocking(), count(`phase="attempt_log"`)
			status, events := post(tt.key, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d", status, tt.status)
			}
			got := int(blocking() - before)
			if tt.stream {
				if got < 4 || got > 3+events+1 {
					t.Errorf("%d blocking ext_proc messages for a stream of %d events, want 3 plus at most one per event and the end", got, events)
				}
			} else if got != tt.want {
				t.Errorf("%d blocking ext_proc messages, want %d", got, tt.want)
			}
			// The attempt log is sent off the request path: wait for it.
			deadline := time.Now().Add(3 * time.Second)
			for int(count(`phase="attempt_log"`)-logsBefore) < tt.attemptLg && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := int(count(`phase="attempt_log"`) - logsBefore); n != tt.attemptLg {
				t.Errorf("%d attempt-log messages, want %d", n, tt.attemptLg)
			}
		})
	}
}
