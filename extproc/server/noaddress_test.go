package server_test

import (
	"strings"
	"testing"

	accesslogdatav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard/switchyard/envoy/contract"
)

// TestRetryWithoutAnAddress: a retry whose provider has no address opens
// no upstream stream; Envoy's reply (UH, its attempt count) is the only
// word of it, and the 503 names it beside the attempt before.
func TestRetryWithoutAnAddress(t *testing.T) {
	h := newHarness(t)
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-uh", "Bearer sk-local-demo"))
	send(t, s, haikuBody())
	// Attempt 1, haiku on an, was refused and retried.
	logAttempt(t, h, "rid-uh", 1, &accesslogdatav3.ResponseFlags{UpstreamConnectionFailure: true})
	send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":status", "503", "content-type", "application/json", contract.LocalReplyHeader, "UH", contract.LocalReplyAttemptHeader, "2"),
	}}})
	resp := send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
		Body: []byte(`{"error":{"message":"no healthy upstream","type":"upstream_error","param":null,"code":"upstream_unavailable"}}`), EndOfStream: true,
	}}})
	body := string(resp.GetResponseBody().GetResponse().GetBodyMutation().GetBody())
	for _, want := range []string{
		`"code":"all_providers_failed"`,
		"no provider could be reached: attempt 1 an/haiku: connect: 127.0.0.1:9102: no connection; attempt 2 oa/mini: DNS: 127.0.0.1 resolved to no address",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("503 body %s lacks %q", body, want)
		}
	}
}
