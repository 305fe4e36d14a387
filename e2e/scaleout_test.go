package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/stack"
)

// TestScaleOut runs three gateway replicas (an Envoy and an ext_proc each)
// on one control plane and one Redis, as a Kubernetes Deployment would.
func TestScaleOut(t *testing.T) {
	const replicas = 3
	s := startStack(t, stack.Options{Replicas: replicas})

	// Every Envoy (its listener and clusters, from xds) and every ext_proc
	// (its filter chains) serves an edited policy. The time each took is
	// logged, not asserted: these machines are shared and noisy.
	t.Run("a policy edit reaches every replica", func(t *testing.T) {
		before := extprocVersion(t, s.Replicas[0])
		models, err := s.ReadPolicyFile("models.yaml")
		if err != nil {
			t.Fatal(err)
		}
		edited := string(models) + `
  - name: gpt-scale-out
    provider: openai
    context_window: 100000
    max_output_tokens: 4096
    price_usd_per_mtok: {input: 0.10, output: 0.40}
`
		start := time.Now()
		if err := s.WritePolicyFile("models.yaml", []byte(edited)); err != nil {
			t.Fatal(err)
		}
		var version string
		if err := eventually(15*time.Second, func() error {
			if v := extprocVersion(t, s.Replicas[0]); v != before {
				version = v
				return nil
			}
			return fmt.Errorf("extproc-0 still serves %s", before)
		}); err != nil {
			t.Fatal(err)
		}
		for i, r := range s.Replicas {
			if err := eventually(15*time.Second, func() error {
				if v := extprocVersion(t, r); v != version {
					return fmt.Errorf("extproc-%d serves %s, want %s", i, v, version)
				}
				for _, stat := range []string{"cluster_manager.cds.version_text", "listener_manager.lds.version_text"} {
					if v := envoyText(t, r, stat); v != version {
						return fmt.Errorf("envoy-%d %s = %q, want %q", i, stat, v, version)
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("replica %d serves policy %s %v after the edit", i, version, time.Since(start).Round(time.Millisecond))
		}
		// And the model is served, whichever replica takes the request.
		c := client(s, demoKey)
		for range 2 * replicas {
			if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    "gpt-scale-out",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			}); err != nil {
				t.Fatalf("the new model: %v", err)
			}
		}
	})

	// Clients keep one connection each, so each is served by one replica
	// (found in that Envoy's access log by the request ID). One replica is
	// killed while they all send; the clients of the others see no error.
	t.Run("a killed replica costs the others' clients nothing", func(t *testing.T) {
		const clients = 12
		type conn struct {
			c       openai.Client
			replica string // the ext_proc that served it
		}
		conns := make([]conn, clients)
		for i := range conns {
			tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
			t.Cleanup(tr.CloseIdleConnections)
			conns[i].c = client(s, demoKey, option.WithHTTPClient(&http.Client{Transport: tr}))
			var resp *http.Response
			if _, err := conns[i].c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("which replica")},
			}, option.WithResponseInto(&resp)); err != nil {
				t.Fatal(err)
			}
			if conns[i].replica = replicaOf(t, s, resp.Header.Get("X-Request-Id")); conns[i].replica == "none" {
				t.Fatal("no replica logged the request")
			}
		}
		victim := conns[0].replica
		survivors := 0
		for _, c := range conns {
			if c.replica != victim {
				survivors++
			}
		}
		if survivors == 0 {
			t.Fatalf("all %d connections landed on %s; nothing to compare", clients, victim)
		}

		var (
			wg       sync.WaitGroup
			stop     = make(chan struct{})
			served   atomic.Int64
			failures sync.Map // client index -> first error, survivors only
		)
		for i, c := range conns {
			if c.replica == victim {
				continue
			}
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := c.c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
						Model:    "gpt-4o-mini",
						Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("steady")},
					}); err != nil {
						failures.LoadOrStore(i, err.Error())
						return
					}
					served.Add(1)
				}
			})
		}
		// The victim's clients send too, so it dies with requests in flight.
		for _, c := range conns {
			if c.replica == victim {
				go func() {
					for range 50 {
						_, _ = c.c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
							Model:    "gpt-4o-mini",
							Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("doomed")},
						})
					}
				}()
			}
		}
		time.Sleep(500 * time.Millisecond)
		n := strings.TrimPrefix(victim, "extproc-")
		s.Kill("envoy-" + n)
		s.Kill("extproc-" + n)
		killedAt := served.Load()
		time.Sleep(2 * time.Second)
		close(stop)
		wg.Wait()
		failures.Range(func(k, v any) bool {
			t.Errorf("client %d (%s) failed: %v", k, conns[k.(int)].replica, v)
			return true
		})
		if after := served.Load() - killedAt; after == 0 {
			t.Error("the surviving replicas served nothing after the kill")
		}
		t.Logf("%d survivors' clients served %d requests; %s and its Envoy killed", survivors, served.Load(), victim)
	})
}

// extprocVersion is the policy version a replica's ext_proc serves.
func extprocVersion(t *testing.T, r stack.Replica) string {
	t.Helper()
	return strings.TrimSpace(get(t, r.ExtProcMetrics+"/healthz"))
}

// envoyText reads one of Envoy's text readouts (the xDS versions).
func envoyText(t *testing.T, r stack.Replica, name string) string {
	t.Helper()
	for _, line := range strings.Split(get(t, r.EnvoyAdmin+"/stats?filter="+name), "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
