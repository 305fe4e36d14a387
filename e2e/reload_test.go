package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/switchyard/switchyard/e2e/harness"
	"github.com/switchyard/switchyard/stack"
)

// TestPolicyReload edits the running policy twice while traffic flows: a
// valid edit (a new model) is served without restarting anything; a broken
// edit is refused, named by file and line, and the last good policy keeps
// serving with no failed request. It runs with the control plane and
// ext_proc apart, and in one process (cmd/node) as make run starts them:
// each keeps its own reloads there too.
func TestPolicyReload(t *testing.T) {
	for _, layout := range []struct {
		name string
		node bool
	}{{"apart", false}, {"one process", true}} {
		t.Run(layout.name, func(t *testing.T) {
			o := defaultOptions()
			o.Node = layout.node
			testPolicyReload(t, o)
		})
	}
}

func testPolicyReload(t *testing.T, o stack.Options) {
	s := startStack(t, o)
	envoyPID := s.PID("envoy-0")

	// Traffic that must never fail while the policy changes under it.
	var (
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		sent     atomic.Int64
		failures atomic.Int64
		firstErr atomic.Value
	)
	c := client(s, demoKey)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("steady")},
			})
			sent.Add(1)
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}
	}()

	models, err := s.ReadPolicyFile("models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	added := string(models) + `
  - name: gpt-4.1-nano
    provider: openai
    context_window: 1000000
    max_output_tokens: 32768
    price_usd_per_mtok: {input: 0.10, output: 0.40}
`
	if err := s.WritePolicyFile("models.yaml", []byte(added)); err != nil {
		t.Fatal(err)
	}
	if err := eventually(15*time.Second, func() error {
		_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "gpt-4.1-nano",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("new model")},
		})
		return err
	}); err != nil {
		t.Fatalf("the added model was never served: %v", err)
	}
	// A new model changes Envoy's routes, not its listener: a listener
	// whose config changed is replaced and its connections drained.
	if n, err := harness.MetricSum(s.Replicas[0].EnvoyAdmin+"/stats/prometheus", "envoy_listener_manager_listener_modified"); err != nil || n != 0 {
		t.Errorf("Envoy replaced its listener %v times for a new model (%v)", n, err)
	}

	broken := strings.Replace(added, "context_window: 1000000", "context_windw: 1000000", 1)
	if err := s.WritePolicyFile("models.yaml", []byte(broken)); err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`models\.yaml:\d+:\d+: models\[\d+\]\.context_windw: unknown field`)
	if err := eventually(15*time.Second, func() error {
		// Each side reports it, in its own log lines.
		for name, process := range map[string]string{"xds": "xds", "extproc-0": "extproc"} {
			if !slices.ContainsFunc(strings.Split(s.Log(name), "\n"), func(line string) bool {
				return named.MatchString(line) && strings.Contains(line, `"process":"`+process+`"`)
			}) {
				return errors.New(name + " has not reported the broken edit yet")
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\nxds log:\n%s", err, tail(s.Log("xds")))
	}
	// The last good policy still serves the model the broken edit would drop.
	if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4.1-nano",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("still here")},
	}); err != nil {
		t.Errorf("after a refused edit the last good policy should serve: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d requests failed during the edits; first: %v", n, sent.Load(), firstErr.Load())
	}
	if sent.Load() < 10 {
		t.Errorf("only %d requests were sent during the edits", sent.Load())
	}
	if pid := s.PID("envoy-0"); pid != envoyPID || !s.Running("envoy-0") {
		t.Errorf("envoy restarted (pid %d → %d)", envoyPID, pid)
	}
	if got := metric(t, s.XDS+"/metrics", `switchyard_config_reloads_total{process="xds",result="refused"}`); got < 1 {
		t.Errorf("xds refused-reload counter = %v, want >= 1", got)
	}
}

func eventually(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}

// metric reads one sample from a Prometheus text endpoint (0 if absent).
func metric(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return f
			}
		}
	}
	return 0
}
