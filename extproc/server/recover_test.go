package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/extproc/server"
	"github.com/switchyard/switchyard/filters"
)

// boom panics in the hook its request names in its body.
type boom struct{ model *policy.Model }

func (boom) Name() string { return "boom" }

func (b boom) RequestBody(_ context.Context, x *filters.Exchange) error {
	if bytes.Contains(x.Body, []byte("panic-in-body")) {
		var m map[string]int
		//lint:ignore SA5000 a nil map write: a real bug, not a staged panic value
		m["x"]++
	}
	x.Plan = []filters.Target{{Model: b.model}}
	return nil
}

func (boom) Attempt(_ context.Context, x *filters.Exchange, _ *filters.Attempt) error {
	if bytes.Contains(x.Body, []byte("panic-in-attempt")) {
		panic("attempt went wrong")
	}
	return nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPanicCostsOneRequest: a panic in a filter, on the request's stream
// or an attempt's, answers that request 500 in the OpenAI envelope, is
// logged with the request ID and counted; the process serves the next
// request as if nothing happened.
func TestPanicCostsOneRequest(t *testing.T) {
	t.Setenv("SY_TEST_OA_KEY", "sk-provider-secret")
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	real, err := filters.Build(filters.Deps{Policy: p, Secrets: envSecrets{}})
	if err != nil {
		t.Fatal(err)
	}
	broken := &server.Runtime{Policy: p, Chains: map[string]*filters.Chain{"chat": filters.NewChain([]filters.Filter{boom{model: p.Model("mini")}})}}
	working := &server.Runtime{Policy: p, Chains: real}
	var useBroken atomic.Bool
	var logs syncBuffer
	srv := server.New(func() *server.Runtime {
		if useBroken.Load() {
			return broken
		}
		return working
	}, slog.New(server.LogHandler(slog.NewJSONHandler(&logs, nil))))
	reg := prometheus.NewRegistry()
	reg.MustRegister(srv.Collector())
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(g, srv)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return lis.Dial() }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	h := &harness{conn: conn, srv: srv}

	useBroken.Store(true)
	// A panic on the request's own stream.
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-body", "Bearer sk-local-demo"))
	resp := send(t, s, bodyMsg(`{"model":"mini","messages":[{"role":"user","content":"panic-in-body"}]}`))
	wantInternal(t, resp, "rid-body")
	closeAndWait(t, s)

	// A panic on an attempt's stream: the attempt is refused, never
	// forwarded untranslated.
	s = h.stream(t, "")
	send(t, s, reqHeaders("rid-att", "Bearer sk-local-demo"))
	send(t, s, bodyMsg(`{"model":"mini","messages":[{"role":"user","content":"panic-in-attempt"}]}`))
	up := h.stream(t, "upstream")
	wantInternal(t, send(t, up, attemptHeaders("rid-att", 1)), "rid-att")
	closeAndWait(t, up)
	closeAndWait(t, s)

	for _, id := range []string{"rid-body", "rid-att"} {
		if !strings.Contains(logs.String(), `"request_id":"`+id+`"`) || !strings.Contains(logs.String(), "panic") {
			t.Errorf("no panic line for %s in the log:\n%s", id, logs.String())
		}
	}
	// The stack logged is the one where the filter panicked, also when
	// the phase ran off the stream's goroutine.
	if !strings.Contains(logs.String(), "boom.RequestBody") {
		t.Errorf("the panic's stack does not name the filter that panicked:\n%s", logs.String())
	}
	if got := panics(t, reg); got != 2 {
		t.Errorf("switchyard_extproc_panics_total = %v, want 2", got)
	}

	// The process goes on serving.
	useBroken.Store(false)
	s = h.stream(t, "")
	send(t, s, reqHeaders("rid-next", "Bearer sk-local-demo"))
	resp = send(t, s, bodyMsg(`{"model":"mini","messages":[{"role":"user","content":"hi"}]}`))
	if resp.GetImmediateResponse() != nil || !resp.GetRequestBody().GetResponse().GetClearRouteCache() {
		t.Errorf("the request after the panics was not routed: %v", resp)
	}
	closeAndWait(t, s)
	if n := srv.InFlight(); n != 0 {
		t.Errorf("%d exchanges left open", n)
	}
}

func bodyMsg(body string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true}}}
}

func wantInternal(t *testing.T, resp *extprocv3.ProcessingResponse, id string) {
	t.Helper()
	ir := resp.GetImmediateResponse()
	if ir == nil || ir.GetStatus().GetCode() != 500 {
		t.Fatalf("answer %v, want an immediate 500", resp)
	}
	if b := string(ir.GetBody()); !strings.Contains(b, `"code":"internal_error"`) || !strings.Contains(b, id) {
		t.Errorf("500 body %s: not the OpenAI envelope naming the request", b)
	}
}

func panics(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "switchyard_extproc_panics_total" {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
