package extprocapp

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// BenchmarkRequest is ext_proc's share of one chat completion served on
// its first attempt, as `make bench` sends it: the whole process (Run on
// configs/local: auth, routing, quota on the embedded store, translation,
// usage with its SQLite ledger, disk spool and audit trail) over its Unix
// socket, and the four messages Envoy sends, with the headers Envoy and the
// simulator send. The client's side of the gRPC stream is in the figures
// too; allocs/op is the guide (docs/BENCHMARKS.md).
func BenchmarkRequest(b *testing.B) {
	root, _ := filepath.Abs("../..")
	dir := b.TempDir()
	b.Chdir(dir)
	sock := filepath.Join(dir, "extproc.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"-config", filepath.Join(root, "configs/local"), "-listen", "unix:" + sock,
			"-metrics", "", "-spool-dir", filepath.Join(dir, "spool"), "-audit-log", filepath.Join(dir, "audit.log")},
			io.Discard, io.Discard)
	}()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("ext_proc did not listen")
		}
	}
	conn, err := grpc.NewClient("passthrough:///extproc",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	client := extprocv3.NewExternalProcessorClient(conn)

	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`)
	answer := []byte(`{"id":"chatcmpl-sim1","object":"chat.completion","created":1796237276,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from gpt-4o-mini: hello","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16}}`)
	kv := func(kv ...string) *corev3.HeaderMap {
		m := &corev3.HeaderMap{}
		for i := 0; i < len(kv); i += 2 {
			m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
		}
		return m
	}
	respHeaders := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{Headers: kv(
		":status", "200", "content-type", "application/json", "date", "Wed, 02 Dec 2026 18:45:55 GMT", "content-length", strconv.Itoa(len(answer)),
		"x-ratelimit-limit-requests", "20000", "x-ratelimit-limit-tokens", "1000000000", "x-ratelimit-remaining-requests", "19999",
		"x-ratelimit-remaining-tokens", "999999990", "x-ratelimit-reset-requests", "1s", "x-ratelimit-reset-tokens", "1ms",
		"x-request-id", "sim-1", "openai-processing-ms", "0", "x-envoy-upstream-service-time", "0")}}}
	respBody := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: answer, EndOfStream: true}}}
	reqBody := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}}

	one := func(i int) {
		s, err := client.Process(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		reqHeaders := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: kv(
			":authority", "127.0.0.1:8080", ":path", "/v1/chat/completions", ":method", "POST", ":scheme", "http",
			"user-agent", "Go-http-client/1.1", "content-type", "application/json", "authorization", "Bearer sk-local-demo",
			"content-length", strconv.Itoa(len(body)), "x-forwarded-proto", "http", "x-request-id", "bench-"+strconv.Itoa(i),
			"x-envoy-external-address", "127.0.0.1")}}}
		for _, m := range []*extprocv3.ProcessingRequest{reqHeaders, reqBody, respHeaders, respBody} {
			if err := s.Send(m); err != nil {
				b.Fatal(err)
			}
			r, err := s.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if r.GetImmediateResponse() != nil {
				b.Fatalf("refused: %v", r.GetImmediateResponse())
			}
		}
		_ = s.CloseSend()
		if _, err := s.Recv(); err != io.EOF {
			b.Fatalf("stream end: %v", err)
		}
	}
	for i := range 200 {
		one(-i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		one(i)
	}
}
