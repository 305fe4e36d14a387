package resources_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	localrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/xds/resources"
)

// TestEdgeLimits: the gateway.edge limits and the per-client bucket reach
// the listener, its connection manager and every provider cluster, with
// the defaults for what the policy leaves out.
func TestEdgeLimits(t *testing.T) {
	t.Parallel()
	p := load(t, `
gateway:
  local_rate_limit: {requests_per_second: 100, burst: 200, per_client: {requests_per_second: 10}}
  edge: {http2_max_concurrent_streams: 50, stream_idle_timeout: 2m, headers_with_underscores: drop, upstream_max_pending_requests: 64, retry_budget_percent: 25}
providers: [{name: sim, kind: openai, base_url: "http://127.0.0.1:9"}]
`)
	l := resources.Listener(p, resources.Options{})
	hcm := &hcmv3.HttpConnectionManager{}
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	h2 := hcm.GetHttp2ProtocolOptions()
	if h2.GetMaxConcurrentStreams().GetValue() != 50 || h2.GetInitialStreamWindowSize().GetValue() != 64<<10 || h2.GetInitialConnectionWindowSize().GetValue() != 1<<20 {
		t.Errorf("HTTP/2 options = %v", h2)
	}
	common := hcm.GetCommonHttpProtocolOptions()
	if common.GetHeadersWithUnderscoresAction() != corev3.HttpProtocolOptions_DROP_HEADER || common.GetIdleTimeout().AsDuration() != time.Hour {
		t.Errorf("common HTTP options = %v", common)
	}
	if hcm.GetStreamIdleTimeout().AsDuration() != 2*time.Minute || hcm.GetRequestHeadersTimeout().AsDuration() != 10*time.Second {
		t.Errorf("stream idle %v, request headers %v", hcm.GetStreamIdleTimeout().AsDuration(), hcm.GetRequestHeadersTimeout().AsDuration())
	}
	if l.GetPerConnectionBufferLimitBytes().GetValue() == 0 {
		t.Error("the listener has no per-connection buffer limit")
	}
	// After the request's ID, the client's bucket comes before the
	// listener's, keyed by credential.
	f := hcm.GetHttpFilters()
	if len(f) < 3 || f[0].GetName() != "switchyard.request_id" || f[1].GetName() != "switchyard.client_ratelimit" || f[2].GetName() != "envoy.filters.http.local_ratelimit" {
		t.Fatalf("filters = %v, want the request ID, then the client bucket, then the listener's first", f)
	}
	client := &localrlv3.LocalRateLimit{}
	if err := f[1].GetTypedConfig().UnmarshalTo(client); err != nil {
		t.Fatal(err)
	}
	d := client.GetDescriptors()
	if len(d) != 1 || d[0].GetTokenBucket().GetTokensPerFill().GetValue() != 10 || d[0].GetTokenBucket().GetMaxTokens() != 100 || d[0].GetEntries()[0].GetValue() != "" {
		t.Errorf("client descriptors = %v, want one wildcard bucket of 10/s, burst 100 (half the listener's)", d)
	}
	if client.GetMaxDynamicDescriptors().GetValue() != 1000 || client.GetAlwaysConsumeDefaultTokenBucket().GetValue() {
		t.Errorf("max clients %v, always consume default %v", client.GetMaxDynamicDescriptors(), client.GetAlwaysConsumeDefaultTokenBucket())
	}
	var headers []string
	for _, rl := range client.GetRateLimits() {
		headers = append(headers, rl.GetActions()[0].GetRequestHeaders().GetHeaderName())
	}
	if len(headers) != 2 || headers[0] != "authorization" || headers[1] != "x-api-key" {
		t.Errorf("client credentials read from %v", headers)
	}

	c := resources.Cluster(p.Provider("sim"), p.Gateway.Edge, resources.Options{})
	if c.GetPerConnectionBufferLimitBytes().GetValue() != 32<<10 {
		t.Errorf("cluster buffer limit = %v", c.GetPerConnectionBufferLimitBytes())
	}
	th := c.GetCircuitBreakers().GetThresholds()[0]
	if th.GetMaxConnections().GetValue() != 10_000 || th.GetMaxPendingRequests().GetValue() != 64 || th.GetMaxRequests().GetValue() != 10_000 {
		t.Errorf("breakers = %v", th)
	}
	if rb := th.GetRetryBudget(); rb.GetBudgetPercent().GetValue() != 25 || rb.GetMinRetryConcurrency().GetValue() != 32 {
		t.Errorf("retry budget = %v", rb)
	}
}

// TestInFlightBound: gateway.edge.max_requests_in_flight reaches Envoy as
// the runtime override of the router-level ext_proc cluster's request
// breaker, and only the router-level stream of a request uses that
// cluster: an attempt's stream or an access log counted against it would
// refuse a request already admitted.
func TestInFlightBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		edge string
		want float64
	}{{"{}", 1024}, {"{max_requests_in_flight: 300}", 300}} {
		p := load(t, "gateway: {edge: "+tc.edge+"}\nproviders: [{name: sim, kind: openai, base_url: \"http://127.0.0.1:9\"}]\n")
		rt := resources.Runtime(p)
		if rt.GetName() != contract.RuntimeLayer {
			t.Errorf("runtime layer %q, want the bootstrap's %q", rt.GetName(), contract.RuntimeLayer)
		}
		if got := rt.GetLayer().GetFields()[contract.MaxRequestsInFlightKey].GetNumberValue(); got != tc.want {
			t.Errorf("edge %s: %s = %v, want %v", tc.edge, contract.MaxRequestsInFlightKey, got, tc.want)
		}
	}
	p := load(t, `providers: [{name: sim, kind: openai, base_url: "http://127.0.0.1:9"}]`)
	l := resources.Listener(p, resources.Options{AccessLog: true})
	// The body is whole before ext_proc's filter opens its stream, so a
	// refusal there keeps the client's connection.
	hcm := &hcmv3.HttpConnectionManager{}
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	f := hcm.GetHttpFilters()
	i := slices.IndexFunc(f, func(f *hcmv3.HttpFilter) bool { return f.GetName() == "envoy.filters.http.ext_proc" })
	buf := &bufferv3.Buffer{}
	if i < 1 || f[i-1].GetTypedConfig().UnmarshalTo(buf) != nil || buf.GetMaxRequestBytes().GetValue() != uint32(p.Gateway.MaxRequestBytes) {
		t.Errorf("filters %v: want a buffer of max_request_bytes (%d) right before ext_proc", f, p.Gateway.MaxRequestBytes)
	}
	b, err := protojson.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	uses := func(cluster string) int { return strings.Count(string(b), `"clusterName":"`+cluster+`"`) }
	if n := uses(contract.ExtProcCluster); n != 1 {
		t.Errorf("%d filters or logs reach ext_proc through %s, want 1 (the router-level filter)", n, contract.ExtProcCluster)
	}
	// The attempt filter, the attempt log and the cut log.
	if n := uses(contract.ExtProcAttemptCluster); n != 3 {
		t.Errorf("%d filters or logs reach ext_proc through %s, want 3", n, contract.ExtProcAttemptCluster)
	}
}

// TestAnthropicRepliesFollowExtProcsMark: Envoy's own replies reach an
// Anthropic client in Anthropic's envelope when ext_proc marked the
// request as one, not only by its path: translating the first attempt
// for an OpenAI provider rewrites the path the client asked for.
func TestAnthropicRepliesFollowExtProcsMark(t *testing.T) {
	t.Parallel()
	p := load(t, `
providers: [{name: sim, kind: openai, base_url: "http://127.0.0.1:9"}]
models: [{name: m, provider: sim, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 1}}]
routes: [{name: messages, path: /v1/messages, api: messages}]
`)
	hcm := &hcmv3.HttpConnectionManager{}
	if err := resources.Listener(p, resources.Options{}).GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	mappers := hcm.GetLocalReplyConfig().GetMappers()
	marked := 0
	for _, m := range mappers {
		b, err := protojson.Marshal(m.GetFilter())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `"key":"`+contract.ClientAPIKey+`"`) && strings.Contains(string(b), `"exact":"`+contract.ClientAnthropic+`"`) {
			marked++
		}
	}
	// Every kind of reply has an Anthropic mapper and an OpenAI one.
	if marked == 0 || marked != len(mappers)/2 {
		t.Errorf("%d of %d local-reply mappers follow ext_proc's mark, want every Anthropic one (%d)", marked, len(mappers), len(mappers)/2)
	}
}
