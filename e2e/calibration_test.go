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
	"github.com/switchyard/switchyard/stack"
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
	root, _ := stack.ModuleRoot()
	routes, err := os.ReadFile(filepath.Join(root, "configs", "local", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := startStack(t, stack.Options{Replicas: 2, Overlay: map[string]string{"routes.yaml": string(routes) + autoRoute}})
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
		// Closed unread, the connection is not kept: each request opens
		// its own, which the shared port (SO_REUSEPORT) spreads over both
		// replicas, so that each calibrates on what the other routed.
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

// postDemo posts body to path with demo's key and reads the answer.
func postDemo(t *testing.T, s *stack.Stack, path, body string) (*http.Response, []byte) {
	t.Helper()
	return withKey(t, s, http.MethodPost, path, demoKey, body)
}

// adjustedRoutes is configs/local's routes with the auto route appended,
// its strong share adjusted within [0.2, 0.5] to a quality bar of 0.9, and
// more filters after usage on it.
func adjustedRoutes(t *testing.T, more string) string {
	t.Helper()
	root, _ := stack.ModuleRoot()
	routes, err := os.ReadFile(filepath.Join(root, "configs", "local", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	adjusted := strings.Replace(autoRoute, "min_samples: 10}", "min_samples: 10, adjust: {min: 0.2, max: 0.5, quality_bar: 0.9}}", 1)
	adjusted = strings.Replace(adjusted, "translate, usage]", "translate, usage"+more+"]", 1)
	return string(routes) + adjusted
}

// awaitStrongShare waits until the auto route's strong share for tenant
// ("": the route's as a whole) is above the asked 0.3 on every replica,
// within the policy's max 0.5; evidence says what should have moved it.
func awaitStrongShare(t *testing.T, s *stack.Stack, tenant, evidence string) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		var got []float64
		above := true
		for _, r := range s.Replicas {
			v, err := harness.MetricSum(r.ExtProcMetrics+"/metrics", "switchyard_routing_strong_share", `route="auto-chat"`, `tenant="`+tenant+`"`)
			if err != nil {
				t.Fatal(err)
			}
			got, above = append(got, v), above && v > 0.3
		}
		if above {
			for _, v := range got {
				if v > 0.5 {
					t.Errorf("strong share per replica %v past the policy's max 0.5", got)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("strong share per replica %v, want each above the asked 0.3 after %s", got, evidence)
		}
		time.Sleep(time.Second)
	}
}

// TestFeedbackMovesTheStrongShare: thumbs down on the answers an auto
// route's weaker model gave, posted through either replica, raise the
// rating tenant's strong share on both (routing.auto.adjust), within its
// bounds, and no one else's: the route's as a whole stays as asked. A
// request is rated once (issue 30, finding 1).
func TestFeedbackMovesTheStrongShare(t *testing.T) {
	t.Parallel()
	s := startStack(t, stack.Options{Replicas: 2, Overlay: map[string]string{"routes.yaml": adjustedRoutes(t, "")}})
	post := func(path, body string) (*http.Response, []byte) { return postDemo(t, s, path, body) }
	var ids []string
	for i := range 30 {
		resp, b := post("/v1/auto/chat/completions", fmt.Sprintf(`{"model":"auto","messages":[{"role":"user","content":"hi %d"}]}`, i))
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
		ids = append(ids, resp.Header.Get("X-Request-Id"))
	}
	for _, id := range ids {
		// The replica that served the request may not have written its row
		// yet when the rating reaches the other one.
		if err := eventually(10*time.Second, func() error {
			if resp, _ := post("/v1/feedback", `{"request_id":"`+id+`","thumbs":"down"}`); resp.StatusCode != 200 {
				return errNotYet
			}
			return nil
		}); err != nil {
			t.Fatalf("rating %s never accepted", id)
		}
	}
	if resp, b := post("/v1/feedback", `{"request_id":"`+ids[0]+`","thumbs":"down"}`); resp.StatusCode != http.StatusConflict {
		t.Errorf("a second rating of one request: %d %s; want 409 already_rated", resp.StatusCode, b)
	}
	awaitStrongShare(t, s, "demo", "30 thumbs down on weak answers")
	for _, r := range s.Replicas {
		if v, err := harness.MetricSum(r.ExtProcMetrics+"/metrics", "switchyard_routing_strong_share", `route="auto-chat"`, `tenant=""`); err != nil || v != 0.3 {
			t.Errorf("the route's own share %v (%v); one tenant's ratings must leave it at 0.3", v, err)
		}
	}
}

// TestJudgeMovesTheStrongShare: with no app rating anything, the judge
// grades the auto route's weaker answers through the real stack (the
// reference answer from the strongest model, the verdict from gpt-4o, both
// through the gateway with the judge's key), and its low verdicts raise the
// route's strong share within the policy's max.
func TestJudgeMovesTheStrongShare(t *testing.T) {
	t.Parallel()
	routes := adjustedRoutes(t, ", {name: judge, args: {model: gpt-4o, sample: 1, max_per_minute: 120, api_key: {env: SWITCHYARD_JUDGE_KEY}}}")
	s := startStack(t, stack.Options{Overlay: map[string]string{"routes.yaml": routes}, Env: []string{"SWITCHYARD_JUDGE_KEY=" + demoKey}})
	metrics := s.Replicas[0].ExtProcMetrics + "/metrics"
	// The simulators answer a conversation holding [[rate 1]] with
	// "Rating: 1": the judge model's verdict on every graded answer.
	for i := range 60 {
		body := fmt.Sprintf(`{"model":"auto","messages":[{"role":"user","content":"hi %d [[rate 1]]"}]}`, i)
		if resp, b := postDemo(t, s, "/v1/auto/chat/completions", body); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
		// A grading is two calls through the gateway: paced, few find the
		// route's four gradings all running.
		time.Sleep(30 * time.Millisecond)
	}
	var graded float64
	if err := eventually(30*time.Second, func() error {
		graded, _ = harness.MetricSum(metrics, "switchyard_judge_gradings_total", `route="auto-chat"`, `outcome="graded"`)
		if graded < 25 {
			return errNotYet
		}
		return nil
	}); err != nil {
		failed, _ := harness.MetricSum(metrics, "switchyard_judge_gradings_total", `route="auto-chat"`, `outcome="failed"`)
		t.Fatalf("%v answers graded (%v failed), want most of the weak ones of 60 at a strong share of 0.3", graded, failed)
	}
	if score, _ := harness.MetricSum(metrics, "switchyard_judge_score_total", `route="auto-chat"`); score != 0 {
		t.Errorf("judged score sum %v, want 0 (every verdict Rating: 1)", score)
	}
	awaitStrongShare(t, s, "", fmt.Sprintf("%v verdicts of Rating: 1", graded))
}
