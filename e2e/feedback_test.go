package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/state/ledger/report"
)

// TestFeedback rates an auto-routed answer through Envoy: the tenant that
// asked may rate it by its x-request-id, another tenant may not (404, as
// for an unknown ID), a bad rating is a 400 in the OpenAI envelope, and
// the rating shows in the tenant's /v1/usage/quality beside what auto
// routing saved against the strongest model, and in the metrics.
func TestFeedback(t *testing.T) {
	t.Parallel()
	ratings := func() (int64, report.QualityRow) {
		code, b := call(t, http.MethodGet, "/v1/usage/quality", demoKey, "")
		var rep report.QualityReport
		if code != 200 || json.Unmarshal(b, &rep) != nil || rep.Tenant != "demo" {
			t.Fatalf("/v1/usage/quality: %d %s", code, b)
		}
		var n int64
		var chat report.QualityRow
		for _, r := range rep.Data {
			n += r.Ratings
			if r.Route == "chat" && r.Auto > 0 {
				chat.Auto += r.Auto
				chat.AutoCostMicros += r.AutoCostMicros
				chat.StrongCostMicros += r.StrongCostMicros
			}
		}
		return n, chat
	}
	before, _ := ratings()
	metrics := shared.Replicas[0].ExtProcMetrics + "/metrics"
	scoreBefore := metricSum(t, metrics, "switchyard_feedback_score_total", `tenant="demo"`)

	var resp *http.Response
	c := client(shared, demoKey)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "auto",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say hi")},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("X-Request-Id")
	if id == "" {
		t.Fatal("the answer names no request")
	}

	for _, tc := range []struct {
		name, key, body string
		wantStatus      int
		wantCode        string
	}{
		{"another tenant's key", teamKey, `{"request_id":"` + id + `","thumbs":"up"}`, 404, "request_not_found"},
		{"an unknown request", demoKey, `{"request_id":"no-such-request","thumbs":"up"}`, 404, "request_not_found"},
		{"a score out of range", demoKey, `{"request_id":"` + id + `","score":7}`, 400, "invalid_feedback"},
		{"no key", "", `{"request_id":"` + id + `","score":1}`, 401, ""},
		{"the tenant that asked", demoKey, `{"request_id":"` + id + `","score":0.8}`, 200, ""},
	} {
		code, b := call(t, http.MethodPost, "/v1/feedback", tc.key, tc.body)
		if code != tc.wantStatus {
			t.Fatalf("%s: %d %s, want %d", tc.name, code, b, tc.wantStatus)
		}
		var env struct {
			Error struct{ Code string } `json:"error"`
		}
		if tc.wantCode != "" && (json.Unmarshal(b, &env) != nil || env.Error.Code != tc.wantCode) {
			t.Errorf("%s: %s, want the error envelope with code %s", tc.name, b, tc.wantCode)
		}
	}

	after, chat := ratings()
	if after != before+1 {
		t.Errorf("demo's ratings went from %d to %d, want one more", before, after)
	}
	if chat.Auto == 0 || chat.StrongCostMicros <= chat.AutoCostMicros {
		t.Errorf("demo's auto-routed chat: %+v; want the strongest model's cost above what auto routing paid", chat)
	}
	if got := metricSum(t, metrics, "switchyard_feedback_score_total", `tenant="demo"`) - scoreBefore; got < 0.79 || got > 0.81 {
		t.Errorf("feedback score metric grew by %v, want 0.8", got)
	}
	if metricSum(t, metrics, "switchyard_usage_auto_cost_micro_usd_total", `tenant="demo"`, `basis="all_strong"`) == 0 {
		t.Error("no all-strong cost in the metrics for demo's auto-routed requests")
	}
}

// call sends one request to the gateway with key (none when empty).
func call(t *testing.T, method, path, key, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, shared.URL+path, bytes.NewReader([]byte(body)))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
