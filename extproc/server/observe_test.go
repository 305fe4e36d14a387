package server_test

import (
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/envoy/contract"
)

// accessLogFields returns the switchyard namespace of a message's dynamic
// metadata, nil when absent.
func accessLogFields(resp *extprocv3.ProcessingResponse) map[string]any {
	v, ok := resp.GetDynamicMetadata().GetFields()[contract.AccessLogMetadataNamespace]
	if !ok {
		return nil
	}
	return v.GetStructValue().AsMap()
}

// TestAccessLogMetadata: the last message of a request carries what it was
// and cost, for Envoy's access log; the messages before it do not.
func TestAccessLogMetadata(t *testing.T) {
	h := newHarness(t)
	s := h.stream(t, "")
	if m := accessLogFields(send(t, s, reqHeaders("rid-m", "Bearer sk-local-demo"))); m != nil {
		t.Errorf("request headers carry %v", m)
	}
	body := `{"model":"mini","messages":[{"role":"user","content":"hi"}]}`
	if m := accessLogFields(send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true}}})); m != nil {
		t.Errorf("request body carries %v", m)
	}
	if m := accessLogFields(send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":status", "200", "content-type", "application/json"),
	}}})); m != nil {
		t.Errorf("response headers carry %v", m)
	}
	answer := `{"id":"c","object":"chat.completion","created":1,"model":"mini-2024","choices":[{"index":0,"message":{"role":"assistant","content":"yo"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	got := accessLogFields(send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(answer), EndOfStream: true}}}))
	want := map[string]any{
		"tenant": "demo", "app": "", "key": "k", "route": "chat", "requested_model": "mini", "model": "mini", "provider": "oa",
		"attempts": 1.0, "input_tokens": 3.0, "output_tokens": 1.0, "cached_tokens": 0.0,
		// 3 tokens at $1/Mtok and 1 at $2/Mtok
		"cost_micro_usd": 5.0, "usage_estimated": false,
	}
	if len(got) != len(want) {
		t.Fatalf("metadata %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

func TestRefusalCarriesAccessLogMetadata(t *testing.T) {
	h := newHarness(t)
	resp := send(t, h.stream(t, ""), reqHeaders("rid-r", "Bearer sk-wrong"))
	if resp.GetImmediateResponse() == nil {
		t.Fatalf("response %v, want a refusal", resp)
	}
	if m := accessLogFields(resp); m == nil || m["tenant"] != "" || m["route"] != "chat" || m["input_tokens"] != 0.0 {
		t.Errorf("refusal metadata %v", m)
	}
}

// TestPhaseMetrics: every message of both streams is timed under its phase.
func TestPhaseMetrics(t *testing.T) {
	h := newHarness(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(h.srv.Collector())
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-p", "Bearer sk-local-demo"))
	send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{
		Body: []byte(`{"model":"mini","messages":[{"role":"user","content":"hi"}]}`), EndOfStream: true}}})
	up := h.stream(t, "upstream")
	send(t, up, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":method", "POST", ":path", "/v1/chat/completions", "x-request-id", "rid-p"),
	}}})
	send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":status", "200"),
	}}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
		}
	}
	// The attempt's stream carries one message: its outcome comes with the
	// router-level response headers, not a message of its own.
	want := map[string]uint64{"request_headers": 1, "request_body": 1, "attempt_request_headers": 1, "response_headers": 1, "attempt_response_headers": 0}
	for phase, n := range want {
		if got[phase] != n {
			t.Errorf("phase %s: %d messages timed, want %d (all: %v)", phase, got[phase], n, got)
		}
	}
}
