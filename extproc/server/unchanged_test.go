package server_test

import (
	"strings"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// TestUnchangedBodyIsNotSentBack: a body the chain leaves byte for byte as
// it came (a provider naming the model as the client did) is passed on as
// Envoy holds it, with no body mutation; one the chain rewrites is sent
// back whole. Answers and streamed events alike.
func TestUnchangedBodyIsNotSentBack(t *testing.T) {
	tests := []struct {
		name      string
		stream    bool
		model     string // the model the provider names
		unchanged bool
	}{
		{name: "answer naming the client's model", model: "mini", unchanged: true},
		{name: "answer naming the provider's model", model: "mini-2024"},
		{name: "event naming the client's model", stream: true, model: "mini", unchanged: true},
		{name: "event naming the provider's model", stream: true, model: "mini-2024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			s := h.stream(t, "")
			send(t, s, reqHeaders("rid-u", "Bearer sk-local-demo"))
			req, contentType := `{"model":"mini","messages":[{"role":"user","content":"hi"}]}`, "application/json"
			answer := `{"id":"c","object":"chat.completion","created":1,"model":"` + tt.model + `","choices":[{"index":0,"message":{"role":"assistant","content":"yo"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
			if tt.stream {
				req, contentType = `{"model":"mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "text/event-stream"
				answer = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"` + tt.model + `","choices":[{"index":0,"delta":{"content":"yo"},"finish_reason":null}],"usage":null}` + "\n\n"
			}
			send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(req), EndOfStream: true}}})
			send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
				Headers: headers(":status", "200", "content-type", contentType),
			}}})
			resp := send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(answer), EndOfStream: !tt.stream}}})
			c := resp.GetResponseBody().GetResponse()
			if got := c.GetBodyMutation() == nil; got != tt.unchanged {
				t.Fatalf("no body mutation: %v, want %v (mutation %q)", got, tt.unchanged, c.GetBodyMutation().GetBody())
			}
			if !tt.unchanged && !strings.Contains(string(c.GetBodyMutation().GetBody()), `"model":"mini"`) {
				t.Errorf("rewritten body %q does not name the client's model", c.GetBodyMutation().GetBody())
			}
			if !tt.stream && setOf(c.GetHeaderMutation())["content-length"] != itoa(len(answer)) && tt.unchanged {
				t.Errorf("content-length %q, want the answer's %d", setOf(c.GetHeaderMutation())["content-length"], len(answer))
			}
		})
	}
}
