package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	accesslogdatav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/extproc/server"
	"github.com/switchyard/switchyard/state/health"
)

// hedgedPolicy is testPolicy with its chat route hedging after 250 ms.
var hedgedPolicy = strings.Replace(testPolicy, "filters: [auth, router, translate, usage]}",
	"filters: [auth, router, translate, usage], hedge: {after: 250ms, max: 1}}", 1)

// TestHedgedRequest: a hedged request is sent to its pair's composite
// cluster with Envoy's hedge on a 250 ms per-try timeout and one retry;
// its second attempt must come through that cluster; the answer Envoy
// names by its provider wins, whatever attempt came last, and is read
// with its translator; the other attempt lost the hedge.
func TestHedgedRequest(t *testing.T) {
	h := newHarnessOf(t, nil, hedgedPolicy)
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-h", "Bearer sk-local-demo"))
	resp := send(t, s, haikuBody())
	c := resp.GetRequestBody().GetResponse()
	set := setOf(c.GetHeaderMutation())
	for k, want := range map[string]string{
		"x-envoy-max-retries": "1", "x-envoy-upstream-rq-per-try-timeout-ms": "250", "x-envoy-hedge-on-per-try-timeout": "true",
	} {
		if set[k] != want {
			t.Errorf("%s = %q, want %q", k, set[k], want)
		}
	}
	route := resp.GetDynamicMetadata().GetFields()[contract.RouteMetadataNamespace].GetStructValue().GetFields()
	pair := contract.HedgeCluster("an", "oa")
	var groups []string
	for _, g := range route[contract.PriorityGroupsKey].GetListValue().GetValues() {
		groups = append(groups, g.GetStructValue().GetFields()["name"].GetStringValue())
	}
	if strings.Join(groups, ",") != pair+","+pair || route[contract.TranslatedForKey].GetStringValue() != pair {
		t.Errorf("priority groups %v, translated for %v; want the pair %s", groups, route[contract.TranslatedForKey], pair)
	}

	// The hedge goes through the pair's cluster.
	up := h.stream(t, "upstream")
	if r := send(t, up, attemptRequest("rid-h", 2, pair)); r.GetRequestHeaders() == nil {
		t.Fatalf("the hedge was refused: %v", r)
	}

	// The first attempt (anthropic) answers, after the hedge started.
	resp = send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":status", "200", "content-type", "application/json", contract.AnsweredByHeader, "an"),
	}}})
	rh := resp.GetResponseHeaders().GetResponse().GetHeaderMutation()
	rs := setOf(rh)
	if rs["x-switchyard-provider"] != "an" || rs["x-switchyard-hedge"] != "after=250ms; attempts=2; won=1" {
		t.Errorf("response headers = %v", rs)
	}
	if !contains(rh.GetRemoveHeaders(), contract.AnsweredByHeader) {
		t.Errorf("%s reaches the client", contract.AnsweredByHeader)
	}
	answer := `{"id":"m","type":"message","role":"assistant","model":"claude-haiku","content":[{"type":"text","text":"yo"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`
	resp = send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(answer), EndOfStream: true}}})
	out := string(resp.GetResponseBody().GetResponse().GetBodyMutation().GetBody())
	if !strings.Contains(out, `"object":"chat.completion"`) || !strings.Contains(out, `"content":"yo"`) {
		t.Errorf("anthropic's answer was not read as anthropic's: %s", out)
	}
	got := accessLogFields(resp)
	// The answer: 3 + 2 µ$; the hedge lost on mini, charged its prompt
	// and the winner's length: 3 + 2 µ$ more.
	if got["provider"] != "an" || got["attempts"] != 2.0 || got["cost_micro_usd"] != 10.0 || got["usage_estimated"] != true {
		t.Errorf("access log = %v", got)
	}
}

// TestHedgeOnAProvidersOwnClusterIsRefused: a hedged request's attempt
// that Envoy sent to a provider's own cluster, not the pair's, is refused:
// translating it for either target could send it the other's request.
func TestHedgeOnAProvidersOwnClusterIsRefused(t *testing.T) {
	h := newHarnessOf(t, nil, hedgedPolicy)
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-h2", "Bearer sk-local-demo"))
	send(t, s, haikuBody())
	up := h.stream(t, "upstream")
	if ir := send(t, up, attemptRequest("rid-h2", 2, "provider_oa")).GetImmediateResponse(); ir == nil {
		t.Error("a hedged attempt on a provider's own cluster was forwarded")
	}
}

// TestHedgeLoserLoggedFirst: the first attempt, past the hedge's delay
// (Envoy flags it UT), is cancelled when the hedge answers, and Envoy's
// attempt log may say so before the answer reaches the router-level
// stream. It lost the hedge all the same: charged as such, and never
// counted against its provider.
func TestHedgeLoserLoggedFirst(t *testing.T) {
	mon, err := health.New(health.DefaultConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessOf(t, mon, hedgedPolicy)
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-h3", "Bearer sk-local-demo"))
	send(t, s, haikuBody())
	up := h.stream(t, "upstream")
	if r := send(t, up, attemptRequest("rid-h3", 2, contract.HedgeCluster("an", "oa"))); r.GetRequestHeaders() == nil {
		t.Fatalf("the hedge was refused: %v", r)
	}
	logAttempt(t, h, "rid-h3", 1, &accesslogdatav3.ResponseFlags{UpstreamRequestTimeout: true})
	send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":status", "200", "content-type", "application/json", contract.AnsweredByHeader, "oa"),
	}}})
	answer := `{"id":"c","object":"chat.completion","created":1,"model":"mini-2024","choices":[{"index":0,"message":{"role":"assistant","content":"yo"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	resp := send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(answer), EndOfStream: true}}})
	got := accessLogFields(resp)
	if got["provider"] != "oa" || got["cost_micro_usd"] != 10.0 {
		t.Errorf("access log = %v, want oa's answer and the lost hedge charged", got)
	}
	closeAndWait(t, s)
	if n := providerErrors(mon, "an"); n != 0 {
		t.Errorf("the hedge's loser counted %d errors against its provider", n)
	}
}

// TestHybridRequest: a request for the route's hybrid model is answered
// by ext_proc itself, from its own calls to every model: an answer cut at
// its length is not acceptable, so the other is kept, and both are
// charged.
func TestHybridRequest(t *testing.T) {
	answer := func(model, finish string, out int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("authorization") != "Bearer sk-provider-secret" {
				http.Error(w, "no key", http.StatusUnauthorized)
				return
			}
			w.Header().Set("content-type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"an answer"},"finish_reason":%q}],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}`, model, finish, out, 10+out)
		}
	}
	cut := httptest.NewServer(answer("cut", "length", 100))
	defer cut.Close()
	whole := httptest.NewServer(answer("whole", "stop", 20))
	defer whole.Close()
	src := fmt.Sprintf(`
providers:
  - {name: a, kind: openai, base_url: %q, api_key: {env: SY_TEST_OA_KEY}}
  - {name: b, kind: openai, base_url: %q, api_key: {env: SY_TEST_OA_KEY}}
models:
  - {name: cut, provider: a, context_window: 1000, max_output_tokens: 100, capabilities: [chat], price_usd_per_mtok: {input: 1, output: 1}}
  - {name: whole, provider: b, context_window: 1000, max_output_tokens: 100, capabilities: [chat], price_usd_per_mtok: {input: 2, output: 2}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, translate, usage], hybrid: {models: [cut, whole], pick: cheapest-acceptable}}
tenants:
  - name: demo
    keys: [{name: k, sha256: 4ff444b1a79536cc47732956cf5bc6256abf64bc1b8adff6843fac08bbb6be9f}]
`, cut.URL, whole.URL)
	h := newHarnessOf(t, nil, src)
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-y", "Bearer sk-local-demo"))
	// First comes Envoy's leave to wait for the calls, then the answer.
	if r := send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{
		Body: []byte(`{"model":"hybrid","messages":[{"role":"user","content":"hi"}]}`), EndOfStream: true,
	}}}); r.GetOverrideMessageTimeout().AsDuration() != 10*time.Minute {
		t.Fatalf("first reply %v, want the answer timeout as the message timeout", r)
	}
	resp, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	ir := resp.GetImmediateResponse()
	if ir.GetStatus().GetCode() != 200 || !strings.Contains(string(ir.GetBody()), `"model":"hybrid"`) {
		t.Fatalf("answer %v", resp)
	}
	if got := setOf(ir.GetHeaders()); got[server.HeaderHybrid] != "picked=whole; by=cheapest-acceptable; answers=1/2" || got["x-switchyard-model"] != "whole" {
		t.Errorf("headers %v", got)
	}
	// cut: 10 + 100 µ$ at 1 $/Mtok; whole: (10 + 20) × 2.
	if got := accessLogFields(resp); got["cost_micro_usd"] != 170.0 || got["attempts"] != 2.0 || got["model"] != "whole" {
		t.Errorf("access log %v", got)
	}
}
