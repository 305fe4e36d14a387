package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	accesslogdatav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"
	httpextprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/service/accesslog/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/extproc/server"
	"github.com/switchyard/switchyard/filters"
	_ "github.com/switchyard/switchyard/filters/all"
	"github.com/switchyard/switchyard/state/health"
)

const testPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:9101", api_key: {env: SY_TEST_OA_KEY}}
  - {name: an, kind: anthropic, base_url: "http://127.0.0.1:9102"}
models:
  - {name: mini, provider: oa, upstream: mini-2024, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 2}}
  - {name: haiku, provider: an, upstream: claude-haiku, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 2}, fallback: [mini]}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, translate, usage]}
tenants:
  - name: demo
    keys: [{name: k, sha256: 4ff444b1a79536cc47732956cf5bc6256abf64bc1b8adff6843fac08bbb6be9f}]
`

// harness is an ext_proc server on an in-memory connection.
type harness struct {
	conn *grpc.ClientConn
	srv  *server.Server
}

func newHarness(t *testing.T) *harness { return newHarnessWith(t, nil) }

// newHarnessWith is newHarness with filters that report to a health monitor.
func newHarnessWith(t *testing.T, mon *health.Monitor) *harness {
	t.Helper()
	return newHarnessOf(t, mon, testPolicy)
}

// newHarnessOf is newHarnessWith on another policy.
func newHarnessOf(t *testing.T, mon *health.Monitor, src string) *harness {
	t.Helper()
	t.Setenv("SY_TEST_OA_KEY", "sk-provider-secret")
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	chains, err := filters.Build(filters.Deps{Policy: p, Secrets: envSecrets{}, Health: mon})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, &server.Runtime{Policy: p, Chains: chains})
}

// serve runs a server of rt on an in-memory connection.
func serve(t *testing.T, rt *server.Runtime) *harness {
	t.Helper()
	h := &harness{}
	h.srv = server.New(func() *server.Runtime { return rt }, slog.New(slog.DiscardHandler))
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(g, h.srv)
	accesslogv3.RegisterAccessLogServiceServer(g, h.srv.AttemptLog())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return lis.Dial() }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	h.conn = conn
	return h
}

type envSecrets struct{}

func (envSecrets) Resolve(ref policy.SecretRef) (string, error) {
	if ref.Env == "SY_TEST_OA_KEY" {
		return "sk-provider-secret", nil
	}
	return "", nil
}

func (h *harness) stream(t *testing.T, phase string) extprocv3.ExternalProcessor_ProcessClient {
	t.Helper()
	ctx := context.Background()
	if phase != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, contract.PhaseHeader, phase)
	}
	s, err := extprocv3.NewExternalProcessorClient(h.conn).Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func headers(kv ...string) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	for i := 0; i < len(kv); i += 2 {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return m
}

func send(t *testing.T, s extprocv3.ExternalProcessor_ProcessClient, req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
	t.Helper()
	if err := s.Send(req); err != nil {
		t.Fatal(err)
	}
	resp, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// haikuBody is the request body message of a chat completion for the
// harness's haiku model, whose plan has two targets.
func haikuBody() *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{
		Body: []byte(`{"model":"haiku","messages":[{"role":"user","content":"hi"}]}`), EndOfStream: true,
	}}}
}

func reqHeaders(id, auth string) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":method", "POST", ":path", "/v1/chat/completions", "x-request-id", id, "authorization", auth),
	}}}
}

func setOf(m *extprocv3.HeaderMutation) map[string]string {
	out := map[string]string{}
	for _, h := range m.GetSetHeaders() {
		out[h.GetHeader().GetKey()] = string(h.GetHeader().GetRawValue())
	}
	return out
}

// TestRequestLifecycle walks one request through the router-level stream
// as Envoy would: headers, body (which carries the first attempt's
// translation), response headers and body.
func TestRequestLifecycle(t *testing.T) {
	h := newHarness(t)
	s := h.stream(t, "")
	req := reqHeaders("rid-1", "Bearer sk-local-demo")
	hm := req.GetRequestHeaders().GetHeaders()
	hm.Headers = append(hm.Headers, headers("x-envoy-retry-on", "5xx", "x-envoy-upstream-rq-per-try-timeout-ms", "1").Headers...)
	resp := send(t, s, req)
	if m := resp.GetRequestHeaders().GetResponse().GetHeaderMutation(); !contains(m.GetRemoveHeaders(), "authorization") {
		t.Errorf("the client's authorization header is not removed: %v", m)
	}
	body := `{"model":"mini","messages":[{"role":"user","content":"hi"}],"stream":true}`
	resp = send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true}}})
	c := resp.GetRequestBody().GetResponse()
	if !c.GetClearRouteCache() {
		t.Error("the route cache is not cleared")
	}
	if got := setOf(c.GetHeaderMutation())["x-envoy-max-retries"]; got != "0" {
		t.Errorf("x-envoy-max-retries = %q, want 0 for a one-target plan", got)
	}
	// The router obeys no client's timeouts or retry rules; only those
	// the client sent are removed.
	for k, sent := range map[string]bool{"x-envoy-upstream-rq-per-try-timeout-ms": true, "x-envoy-retry-on": true, "x-envoy-hedge-on-per-try-timeout": false} {
		if removed := contains(c.GetHeaderMutation().GetRemoveHeaders(), k); removed != sent {
			t.Errorf("%s (sent: %v) removed: %v: %v", k, sent, removed, c.GetHeaderMutation())
		}
	}
	// ext_proc cuts a stream at stream_timeout (default: answer_timeout,
	// 10m); Envoy's bound is the backstop, a per-try idle timeout (60s)
	// later.
	if got := setOf(c.GetHeaderMutation())[contract.AnswerTimeoutHeader]; got != "660000" {
		t.Errorf("a stream's %s = %q, want stream_timeout + per_try_idle_timeout = 660000", contract.AnswerTimeoutHeader, got)
	}
	groups := resp.GetDynamicMetadata().GetFields()[contract.RouteMetadataNamespace].GetStructValue().GetFields()["priority_groups"].GetListValue().GetValues()
	if len(groups) != 1 || groups[0].GetStructValue().GetFields()["name"].GetStringValue() != "oa" {
		t.Errorf("priority groups = %v", groups)
	}

	// The reply to the body carries the request translated for the first
	// attempt, which so needs no message on the per-attempt stream.
	if md := resp.GetDynamicMetadata().GetFields()[contract.RouteMetadataNamespace].GetStructValue().GetFields()[contract.TranslatedForKey]; md.GetStringValue() != "provider_oa" {
		t.Errorf("%s = %v, want the first attempt's cluster", contract.TranslatedForKey, md)
	}
	set := setOf(c.GetHeaderMutation())
	if set[":authority"] != "127.0.0.1:9101" || set["authorization"] != "Bearer sk-provider-secret" ||
		set["accept-encoding"] != "identity" || set[contract.RouteHeader] != "chat" {
		t.Errorf("first attempt's headers = %v", set)
	}
	// The provider's path is the client's: Envoy is not asked to set it
	// again.
	if p, ok := set[":path"]; ok {
		t.Errorf(":path set to %q, the request's own", p)
	}
	var sent map[string]any
	if err := json.Unmarshal(c.GetBodyMutation().GetBody(), &sent); err != nil {
		t.Fatal(err)
	}
	if sent["model"] != "mini-2024" || sent["stream_options"].(map[string]any)["include_usage"] != true {
		t.Errorf("translated body = %v", sent)
	}
	if set["content-length"] != itoa(len(c.GetBodyMutation().GetBody())) {
		t.Errorf("content-length %q does not match the body", set["content-length"])
	}
	// Envoy finds no route without x-forwarded-proto: the route removes it.
	for _, k := range contract.RouteRemovedHeaders {
		if contains(c.GetHeaderMutation().GetRemoveHeaders(), k) {
			t.Errorf("%s is removed before Envoy finds the route", k)
		}
	}

	// The answer streams back and is normalised.
	resp = send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":status", "200", "content-type", "text/event-stream", "openai-organization", "org-x", "content-length", "999"),
	}}})
	if got := resp.GetModeOverride().GetResponseBodyMode(); got != httpextprocv3.ProcessingMode_STREAMED {
		t.Errorf("mode override = %v, want STREAMED", got)
	}
	if !overrideAllowed(t, resp.GetModeOverride()) {
		t.Errorf("mode override %v is not one the generated Envoy configuration allows", resp.GetModeOverride())
	}
	rh := resp.GetResponseHeaders().GetResponse().GetHeaderMutation()
	rs := setOf(rh)
	if rs["x-switchyard-model"] != "mini" || rs["x-switchyard-provider"] != "oa" || rs["x-request-id"] != "rid-1" {
		t.Errorf("response headers = %v", rs)
	}
	if !contains(rh.GetRemoveHeaders(), "openai-organization") || !contains(rh.GetRemoveHeaders(), "content-length") {
		t.Errorf("provider headers kept: removed only %v", rh.GetRemoveHeaders())
	}
	chunk := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"mini-2024","choices":[{"index":0,"delta":{"content":"yo"},"finish_reason":null}],"usage":null}` + "\n\n"
	resp = send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(chunk[:30])}}})
	if b := resp.GetResponseBody().GetResponse().GetBodyMutation().GetBody(); len(b) != 0 {
		t.Errorf("half an event produced output: %q", b)
	}
	rest := chunk[30:] + `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"mini-2024","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}` + "\n\ndata: [DONE]\n\n"
	resp = send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(rest), EndOfStream: true}}})
	out := string(resp.GetResponseBody().GetResponse().GetBodyMutation().GetBody())
	if !strings.Contains(out, `"model":"mini"`) || strings.Contains(out, "usage") || !strings.HasSuffix(out, "data: [DONE]\n\n") {
		t.Errorf("streamed output = %q", out)
	}
	_ = s.CloseSend()
	if _, err := s.Recv(); err == nil {
		t.Error("stream still open after the response ended")
	}
	if h.srv.InFlight() != 0 {
		t.Errorf("%d exchanges still in flight", h.srv.InFlight())
	}
}

func TestBadKeyIsRefusedWithTheEnvelope(t *testing.T) {
	h := newHarness(t)
	s := h.stream(t, "")
	resp := send(t, s, reqHeaders("rid-2", "Bearer sk-wrong"))
	ir := resp.GetImmediateResponse()
	if ir == nil || ir.GetStatus().GetCode() != 401 {
		t.Fatalf("response = %v, want a 401 immediate response", resp)
	}
	var env struct {
		Error struct{ Message, Type, Code string } `json:"error"`
	}
	if err := json.Unmarshal(ir.GetBody(), &env); err != nil || env.Error.Code != "invalid_api_key" {
		t.Errorf("body = %s", ir.GetBody())
	}
	if strings.Contains(string(ir.GetBody()), "sk-wrong") {
		t.Error("the refusal echoes the key")
	}
	if setOf(ir.GetHeaders())["x-request-id"] != "rid-2" {
		t.Error("x-request-id missing from the refusal")
	}
}

// TestDuplicateRequestIDIsRefused: a second request under the x-request-id
// of one in flight is refused with 409, and neither replaces nor, when it
// ends, removes the first's exchange.
func TestDuplicateRequestIDIsRefused(t *testing.T) {
	h := newHarness(t)
	first := h.stream(t, "")
	if resp := send(t, first, reqHeaders("dup", "Bearer sk-local-demo")); resp.GetImmediateResponse() != nil {
		t.Fatalf("the first request was refused: %v", resp)
	}
	second := h.stream(t, "")
	resp := send(t, second, reqHeaders("dup", "Bearer sk-local-demo"))
	if ir := resp.GetImmediateResponse(); ir == nil || ir.GetStatus().GetCode() != 409 || !strings.Contains(string(ir.GetBody()), "duplicate_request_id") {
		t.Fatalf("second request: %v, want a 409 duplicate_request_id", resp)
	}
	if err := second.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Recv(); err == nil {
		t.Fatal("the second stream stayed open")
	}
	if n := h.srv.InFlight(); n != 1 {
		t.Errorf("%d exchanges in flight after the duplicate ended, want the first's", n)
	}
}

// TestProviderGetsOnlyAllowedClientHeaders: of the client's headers, only
// content-type, accept and x-request-id reach the provider; the rest
// (cookies, the end user's address, organization, beta features, user
// ids, telemetry) are removed from every attempt.
func TestProviderGetsOnlyAllowedClientHeaders(t *testing.T) {
	h := newHarness(t)
	s := h.stream(t, "")
	withheld := []string{"cookie", "x-forwarded-for", "openai-organization", "openai-project", "anthropic-beta", "x-user-id", "x-stainless-os", "idempotency-key", "authorization"}
	kv := []string{":method", "POST", ":path", "/v1/chat/completions", "x-request-id", "rid-h", "content-type", "application/json", "accept", "application/json"}
	for _, k := range withheld {
		v := "v"
		if k == "authorization" {
			v = "Bearer sk-local-demo"
		}
		kv = append(kv, k, v)
	}
	send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: headers(kv...)}}})
	first := send(t, s, haikuBody())
	up := h.stream(t, "upstream")
	retry := send(t, up, &extprocv3.ProcessingRequest{
		Request:    &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: headers(kv...)}},
		Attributes: attemptRequest("rid-h", 2, "provider_oa").GetAttributes(),
	})
	for name, m := range map[string]*extprocv3.HeaderMutation{
		"first attempt": first.GetRequestBody().GetResponse().GetHeaderMutation(),
		"retry":         retry.GetRequestHeaders().GetResponse().GetHeaderMutation(),
	} {
		for _, k := range withheld {
			if k == "authorization" && setOf(m)[k] == "Bearer sk-provider-secret" {
				continue // the provider's key replaces the client's
			}
			if !contains(m.GetRemoveHeaders(), k) {
				t.Errorf("%s: %s reaches the provider (removed: %v)", name, k, m.GetRemoveHeaders())
			}
		}
		for _, k := range []string{"content-type", "accept", "x-request-id", ":path"} {
			if contains(m.GetRemoveHeaders(), k) {
				t.Errorf("%s: %s is removed", name, k)
			}
		}
	}
}

// TestAttemptForUnknownRequestFailsClosed: an attempt whose exchange the
// server does not know must never be forwarded untranslated.
func TestAttemptForUnknownRequestFailsClosed(t *testing.T) {
	h := newHarness(t)
	up := h.stream(t, "upstream")
	resp := send(t, up, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":method", "POST", ":path", "/v1/chat/completions", "x-request-id", "never-seen"),
	}}})
	if ir := resp.GetImmediateResponse(); ir == nil || ir.GetStatus().GetCode() != 503 {
		t.Fatalf("response = %v, want a 503 immediate response", resp)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

func attemptRequest(id string, n int, cluster string) *extprocv3.ProcessingRequest {
	attrs, _ := structpb.NewStruct(map[string]any{"upstream.request_attempt_count": n, "xds.cluster_name": cluster})
	return &extprocv3.ProcessingRequest{
		Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{
			Headers: headers(":method", "POST", ":path", "/v1/chat/completions", "x-request-id", id),
		}},
		Attributes: map[string]*structpb.Struct{"envoy.filters.http.ext_proc": attrs},
	}
}

// TestAttemptsFollowEnvoysNumbering: the per-attempt stream numbers
// attempts as Envoy does. The second attempt must be translated for the
// plan's second target; an attempt whose cluster disagrees with the plan,
// or a first attempt on the per-attempt stream although the router level
// translated it already (Envoy sent it to another cluster than the one it
// was translated for), must not be forwarded at all.
func TestAttemptsFollowEnvoysNumbering(t *testing.T) {
	h := newHarness(t)
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-3", "Bearer sk-local-demo"))
	resp := send(t, s, haikuBody())
	if got := setOf(resp.GetRequestBody().GetResponse().GetHeaderMutation())["x-envoy-max-retries"]; got != "1" {
		t.Fatalf("x-envoy-max-retries = %q, want 1 for a two-target plan", got)
	}
	if got := setOf(resp.GetRequestBody().GetResponse().GetHeaderMutation())[contract.AnswerTimeoutHeader]; got != "600000" {
		t.Errorf("%s = %q, want the default answer_timeout of 10m for a non-streamed answer", contract.AnswerTimeoutHeader, got)
	}
	up := h.stream(t, "upstream")
	ar := send(t, up, attemptRequest("rid-3", 2, "provider_oa"))
	set := setOf(ar.GetRequestHeaders().GetResponse().GetHeaderMutation())
	if set[":path"] != "/v1/chat/completions" || set[":authority"] != "127.0.0.1:9101" {
		t.Errorf("attempt 2 was not translated for the second target: %v", set)
	}
	for _, a := range []struct {
		n       int
		cluster string
	}{{1, "provider_oa"}, {3, "provider_an"}} {
		up := h.stream(t, "upstream")
		bad := send(t, up, attemptRequest("rid-3", a.n, a.cluster))
		if ir := bad.GetImmediateResponse(); ir == nil || ir.GetStatus().GetCode() != 500 {
			t.Errorf("attempt %d on %s: got %v, want a refusal", a.n, a.cluster, bad)
		}
	}
}

// TestCancelledAttemptsDoNotRace: when the client goes away, Envoy cancels
// the attempt's stream and the router-level one together. The attempt's
// stream records the attempt's outcome ("no response") while the router
// level's Done hooks read every attempt's outcome for the usage record;
// run with -race, the two must not touch the outcome unsynchronised.
func TestCancelledAttemptsDoNotRace(t *testing.T) {
	h := newHarness(t)
	for i := range 20 {
		id := "rid-cancel-" + itoa(i)
		ctx, cancel := context.WithCancel(context.Background())
		s, err := extprocv3.NewExternalProcessorClient(h.conn).Process(ctx)
		if err != nil {
			t.Fatal(err)
		}
		send(t, s, reqHeaders(id, "Bearer sk-local-demo"))
		send(t, s, haikuBody())
		actx, acancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), contract.PhaseHeader, "upstream"))
		up, err := extprocv3.NewExternalProcessorClient(h.conn).Process(actx)
		if err != nil {
			t.Fatal(err)
		}
		send(t, up, attemptRequest(id, 2, "provider_oa"))
		go acancel()
		cancel()
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.srv.InFlight() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.srv.InFlight(); n != 0 {
		t.Errorf("%d exchanges still in flight after every stream was cancelled", n)
	}
}

// TestAttemptLogSettlesRetriedAttempts: the per-attempt stream sends only
// its request headers; a retried attempt's outcome arrives in Envoy's
// attempt log, and the 503 that ends a request whose every attempt failed
// names each attempt's own failure.
func TestAttemptLogSettlesRetriedAttempts(t *testing.T) {
	h := newHarness(t)
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-4", "Bearer sk-local-demo"))
	send(t, s, haikuBody())
	// Attempt 1 was translated in the body's reply; the retry comes on
	// the per-attempt stream.
	up := h.stream(t, "upstream")
	if r := send(t, up, attemptRequest("rid-4", 2, "")); r.GetRequestHeaders() == nil {
		t.Fatalf("attempt 2 refused: %v", r)
	}
	_ = up.CloseSend()
	logs, err := accesslogv3.NewAccessLogServiceClient(h.conn).StreamAccessLogs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := logs.Send(&accesslogv3.StreamAccessLogsMessage{LogEntries: &accesslogv3.StreamAccessLogsMessage_HttpLogs{HttpLogs: &accesslogv3.StreamAccessLogsMessage_HTTPAccessLogEntries{
		LogEntry: []*accesslogdatav3.HTTPAccessLogEntry{{
			CommonProperties: &accesslogdatav3.AccessLogCommon{UpstreamRequestAttemptCount: 1},
			Request:          &accesslogdatav3.HTTPRequestProperties{RequestId: "rid-4"},
			Response:         &accesslogdatav3.HTTPResponseProperties{ResponseCode: wrapperspb.UInt32(529)},
		}},
	}}}); err != nil {
		t.Fatal(err)
	}
	send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":status", "503", "content-type", "application/json", contract.LocalReplyHeader, "1"),
	}}})
	resp := send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
		Body: []byte(`{"error":{"message":"upstream connect error","type":"upstream_error","param":null,"code":"upstream_unavailable"}}`), EndOfStream: true,
	}}})
	body := string(resp.GetResponseBody().GetResponse().GetBodyMutation().GetBody())
	for _, want := range []string{"all_providers_failed", "attempt 1 ", "529", "attempt 2 ", "no response"} {
		if !strings.Contains(body, want) {
			t.Errorf("503 body %s lacks %q", body, want)
		}
	}
}

// TestRetriesTrailingTheAnswer: the retries' streams reach ext_proc on a
// connection of their own, so Envoy's 503 after its last retry (flag URX)
// may arrive before the last retry's stream. The answer must still be
// the 503 that names every attempt, not Envoy's own reply.
func TestRetriesTrailingTheAnswer(t *testing.T) {
	h := newHarness(t)
	s := h.stream(t, "")
	send(t, s, reqHeaders("rid-trail", "Bearer sk-local-demo"))
	send(t, s, haikuBody())
	late := make(chan error, 1)
	go func() {
		time.Sleep(30 * time.Millisecond)
		up := h.stream(t, "upstream")
		if err := up.Send(attemptRequest("rid-trail", 2, "")); err != nil {
			late <- err
			return
		}
		_, err := up.Recv()
		late <- err
	}()
	send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: &extprocv3.HttpHeaders{
		Headers: headers(":status", "503", "content-type", "application/json", contract.LocalReplyHeader, "URX,UF"),
	}}})
	resp := send(t, s, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{
		Body: []byte(`{"error":{"message":"upstream connect error","type":"upstream_error","param":null,"code":"upstream_unavailable"}}`), EndOfStream: true,
	}}})
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	body := string(resp.GetResponseBody().GetResponse().GetBodyMutation().GetBody())
	for _, want := range []string{"all_providers_failed", "attempt 1 ", "attempt 2 "} {
		if !strings.Contains(body, want) {
			t.Errorf("503 body %q lacks %q", body, want)
		}
	}
}
