package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/e2e/harness"
)

// autoRoute is a chat route that asks for a strong share instead of
// thresholds, appended to configs/local's routes.
const autoRoute = `
  - name: auto-chat
    path: /v1/auto/chat/completions
    api: chat_completions
    filters: [auth, router, quota, translate, usage]
    routing:
      auto: {strong_share_max: 0.3, min_samples: 10}
`

// TestCalibrationSharedAcrossReplicas: on two replicas behind one
// listener, the scores each routed reach the other through Redis, so both
// calibrate the auto route on the whole deployment's traffic.
func TestCalibrationSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	root, _ := harness.ModuleRoot()
	routes, err := os.ReadFile(filepath.Join(root, "configs", "local", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := startStack(t, harness.Options{Replicas: 2, Overlay: map[string]string{"routes.yaml": string(routes) + autoRoute}})
	const n = 40
	for i := range n {
		body := fmt.Sprintf(`{"model":"auto","messages":[{"role":"user","content":"question %d: %s"}]}`, i, []string{"hi", "prove that the sum of two odd numbers is even, step by step", "write a haiku"}[i%3])
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/auto/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+demoKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	// Each replica refreshes every 5 s: within a few rounds both count
	// every score, including the other's.
	deadline := time.Now().Add(45 * time.Second)
	for {
		var got []float64
		for _, r := range s.Replicas {
			v, err := harness.MetricSum(r.ExtProcMetrics+"/metrics", "switchyard_routing_calibration_samples", `route="auto-chat"`, `tenant="demo"`)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		if got[0] > n-0.5 && got[1] > n-0.5 && got[0] < n+0.5 && got[1] < n+0.5 {
			th, err := harness.MetricSum(s.Replicas[0].ExtProcMetrics+"/metrics", "switchyard_routing_calibrated_threshold", `route="auto-chat"`, `tenant="demo"`)
			if err != nil || th <= 0 || th > 1.01 {
				t.Errorf("calibrated threshold %v (%v), want a score", th, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("samples per replica %v, want %d on both (the whole deployment's)", got, n)
		}
		time.Sleep(time.Second)
	}
}
