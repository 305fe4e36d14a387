package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// TestStreamReleasesRequest: once a streamed answer's headers arrive, the
// exchange holds neither the client's body nor any attempt's translation,
// only the parsed request and the body's hash, and no further attempt is
// translated; a whole answer's exchange keeps the body (its response
// headers may be Envoy's own reply, after which retries' streams can
// still trail). Either way an attempt's translation goes once it is sent,
// and its provider's headers once read, their quota kept.
func TestStreamReleasesRequest(t *testing.T) {
	body := `{"model":"haiku","stream":true,"messages":[{"role":"user","content":"a long prompt, held for as long as the answer streams"}]}`
	sum := sha256.Sum256([]byte(body))
	tests := []struct {
		name        string
		contentType string
		wantRelease bool
	}{
		{"streamed", "text/event-stream", true},
		{"whole", "application/json", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			id := "rid-release-" + tt.name
			s := h.stream(t, "")
			send(t, s, reqHeaders(id, "Bearer sk-local-demo"))
			send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true}}})
			// The first target fails; Envoy retries on the second.
			if ar := send(t, h.stream(t, "upstream"), attemptRequest(id, 2, "provider_oa")); ar.GetImmediateResponse() != nil {
				t.Fatalf("the retry was refused: %v", ar)
			}
			send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
				Headers: headers(":status", "200", "content-type", tt.contentType,
					"x-ratelimit-remaining-requests", "50", "x-ratelimit-limit-requests", "100"),
			}}})

			x := h.srv.ExchangeOf(id)
			if x == nil {
				t.Fatal("no exchange in flight")
			}
			for _, a := range x.Attempts() {
				if a.Upstream.Body != nil {
					t.Errorf("attempt %d keeps its translated body after it was sent", a.N)
				}
			}
			if x.Chat == nil || x.ClientBodySHA256() != hex.EncodeToString(sum[:]) {
				t.Errorf("lost what is read at the end: parsed request %v, body hash %s", x.Chat != nil, x.ClientBodySHA256())
			}
			// The response's headers alias the message they came in: a
			// stream keeps only what was read of them.
			if got := x.Response.Header == nil; got != tt.wantRelease {
				t.Errorf("response headers released: %v, want %v", got, tt.wantRelease)
			}
			if o := x.LastAttempt().Outcome(); o.Header != nil || o.Quota != 0.5 {
				t.Errorf("the answering attempt's outcome keeps headers %v and quota %v, want none and 0.5", o.Header, o.Quota)
			}
			if got := x.Body == nil && x.ClientBody() == nil; got != tt.wantRelease {
				t.Errorf("body released: %v, want %v (body %q)", got, tt.wantRelease, x.Body)
			}
			// Envoy makes no attempt after the answer's headers; one that
			// came all the same is refused once the body is gone.
			ar := send(t, h.stream(t, "upstream"), attemptRequest(id, 3, "provider_oa"))
			if refused := ar.GetImmediateResponse().GetStatus().GetCode() == 500; refused != tt.wantRelease {
				t.Errorf("an attempt after the answer's headers refused: %v, want %v", refused, tt.wantRelease)
			}
		})
	}
}
