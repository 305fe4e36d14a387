package server_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	accesslogdatav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/service/accesslog/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/state/health"
)

// TestBlame: an attempt that got no response headers counts against its
// provider only when the flags Envoy gave it show the provider failed (in
// the attempt log of a retried attempt, or on Envoy's own reply for the
// last one); never when the client went away or Envoy refused on its own.
func TestBlame(t *testing.T) {
	tests := []struct {
		name string
		// next is what Envoy does after attempt 1's stream ended.
		next       func(t *testing.T, h *harness, s extprocv3.ExternalProcessor_ProcessClient)
		wantErrors int // of provider "an", attempt 1's
	}{
		{"the client went away", func(t *testing.T, _ *harness, s extprocv3.ExternalProcessor_ProcessClient) {
			closeAndWait(t, s)
		}, 0},
		{"Envoy retried on the next provider after a connection failure", func(t *testing.T, h *harness, s extprocv3.ExternalProcessor_ProcessClient) {
			up := h.stream(t, "upstream")
			send(t, up, attemptHeaders("rid-b", 2))
			closeAndWait(t, up)
			logAttempt(t, h, "rid-b", 1, &accesslogdatav3.ResponseFlags{UpstreamConnectionFailure: true})
			send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
				Headers: headers(":status", "200", "content-type", "application/json"),
			}}})
			closeAndWait(t, s)
		}, 1},
		{"the attempt log shows the client left", func(t *testing.T, h *harness, s extprocv3.ExternalProcessor_ProcessClient) {
			logAttempt(t, h, "rid-b", 1, &accesslogdatav3.ResponseFlags{DownstreamConnectionTermination: true})
			closeAndWait(t, s)
		}, 0},
		{"Envoy answered: upstream overflow (its own)", func(t *testing.T, _ *harness, s extprocv3.ExternalProcessor_ProcessClient) {
			send(t, s, localReply("UO"))
			closeAndWait(t, s)
		}, 0},
		{"Envoy answered: local reset", func(t *testing.T, _ *harness, s extprocv3.ExternalProcessor_ProcessClient) {
			send(t, s, localReply("LR"))
			closeAndWait(t, s)
		}, 0},
		{"Envoy answered: connection failure", func(t *testing.T, _ *harness, s extprocv3.ExternalProcessor_ProcessClient) {
			send(t, s, localReply("UF,URX"))
			closeAndWait(t, s)
		}, 1},
		{"Envoy answered: remote reset", func(t *testing.T, _ *harness, s extprocv3.ExternalProcessor_ProcessClient) {
			send(t, s, localReply("UR"))
			closeAndWait(t, s)
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mon, err := health.New(health.DefaultConfig(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarnessWith(t, mon)
			s := h.stream(t, "")
			send(t, s, reqHeaders("rid-b", "Bearer sk-local-demo"))
			// haiku (provider an) falls back to mini (provider oa).
			body := `{"model":"haiku","messages":[{"role":"user","content":"hi"}]}`
			send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true}}})
			up := h.stream(t, "upstream")
			send(t, up, attemptHeaders("rid-b", 1))
			closeAndWait(t, up) // an attempt's one message
			tt.next(t, h, s)
			if n := h.srv.InFlight(); n != 0 {
				t.Fatalf("%d exchanges still open", n)
			}
			if got := providerErrors(mon, "an"); got != tt.wantErrors {
				t.Errorf("provider an has %d errors, want %d", got, tt.wantErrors)
			}
		})
	}
}

// TestCutLogBlamesAStall: a stream that ends after its answer began is
// its provider's failure only when Envoy's cut log names it and it had
// been silent for (nearly) the per-try idle timeout; a client that leaves,
// in a silence or while events flow, is never counted.
func TestCutLogBlamesAStall(t *testing.T) {
	const idle = 200 * time.Millisecond
	tests := []struct {
		name       string
		silence    time.Duration
		cutLogged  bool
		wantErrors int
	}{
		{"stalled: Envoy's idle timeout cut it", idle, true, 1},
		{"the client left in a silence", idle, false, 0},
		{"the client left while events flowed", 0, false, 0},
		{"a cut logged after events flowed is not a stall", 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mon, err := health.New(health.DefaultConfig(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarnessOf(t, mon, strings.Replace(testPolicy, "filters: [auth, router, translate, usage]}",
				"filters: [auth, router, translate, usage], per_try_idle_timeout: "+idle.String()+"}", 1))
			s := h.stream(t, "")
			send(t, s, reqHeaders("rid-c", "Bearer sk-local-demo"))
			body := `{"model":"mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
			send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true}}})
			send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
				Headers: headers(":status", "200", "content-type", "text/event-stream"),
			}}})
			send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
				Body: []byte(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"mini-2024","choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\n"),
			}}})
			time.Sleep(tt.silence)
			if tt.cutLogged {
				logCut(t, h, "rid-c")
			}
			closeAndWait(t, s)
			if got := providerErrors(mon, "oa"); got != tt.wantErrors {
				t.Errorf("provider oa has %d errors, want %d", got, tt.wantErrors)
			}
		})
	}
}

// logCut sends Envoy's cut-log entry for a request and waits until the
// server has read it.
func logCut(t *testing.T, h *harness, id string) {
	t.Helper()
	logs, err := accesslogv3.NewAccessLogServiceClient(h.conn).StreamAccessLogs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Send(&accesslogv3.StreamAccessLogsMessage{
		Identifier: &accesslogv3.StreamAccessLogsMessage_Identifier{LogName: contract.CutLogName},
		LogEntries: &accesslogv3.StreamAccessLogsMessage_HttpLogs{HttpLogs: &accesslogv3.StreamAccessLogsMessage_HTTPAccessLogEntries{
			LogEntry: []*accesslogdatav3.HTTPAccessLogEntry{{
				CommonProperties: &accesslogdatav3.AccessLogCommon{ResponseFlags: &accesslogdatav3.ResponseFlags{StreamIdleTimeout: true}},
				Request:          &accesslogdatav3.HTTPRequestProperties{RequestId: id},
				Response:         &accesslogdatav3.HTTPResponseProperties{},
			}},
		}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := logs.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
}

func attemptHeaders(id string, n int) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: headers(":method", "POST", ":path", "/v1/chat/completions", "x-request-id", id),
		}},
		Attributes: map[string]*structpb.Struct{"envoy.filters.http.ext_proc": {Fields: map[string]*structpb.Value{
			"upstream.request_attempt_count": structpb.NewNumberValue(float64(n)),
		}}},
	}
}

// logAttempt sends Envoy's attempt-log entry for an attempt that got no
// response, with its flags, and waits until the server has read it.
func logAttempt(t *testing.T, h *harness, id string, n uint32, flags *accesslogdatav3.ResponseFlags) {
	t.Helper()
	logs, err := accesslogv3.NewAccessLogServiceClient(h.conn).StreamAccessLogs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Send(&accesslogv3.StreamAccessLogsMessage{LogEntries: &accesslogv3.StreamAccessLogsMessage_HttpLogs{HttpLogs: &accesslogv3.StreamAccessLogsMessage_HTTPAccessLogEntries{
		LogEntry: []*accesslogdatav3.HTTPAccessLogEntry{{
			CommonProperties: &accesslogdatav3.AccessLogCommon{UpstreamRequestAttemptCount: n, ResponseFlags: flags},
			Request:          &accesslogdatav3.HTTPRequestProperties{RequestId: id},
			Response:         &accesslogdatav3.HTTPResponseProperties{},
		}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := logs.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
}

// localReply is the response headers of Envoy's own reply with flags.
func localReply(flags string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":status", "503", "content-type", "application/json", contract.LocalReplyHeader, flags),
	}}}
}

// closeAndWait ends a stream from Envoy's side and waits until the server
// has finished with it.
func closeAndWait(t *testing.T, s extprocv3.ExternalProcessor_ProcessClient) {
	t.Helper()
	_ = s.CloseSend()
	for {
		if _, err := s.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("stream ended with %v", err)
			}
			return
		}
	}
}

func providerErrors(mon *health.Monitor, name string) int {
	for _, p := range mon.Snapshot() {
		if p.Provider == name {
			return p.Stats.Errors
		}
	}
	return 0
}
