package providersim_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/providersim"
)

// kindCalls holds, per kind, a plain and a streaming request whose reply
// is "Hello from m: one two three" (6 words).
var kindCalls = map[providersim.Kind]struct{ plain, stream call }{
	providersim.KindOpenAI: {
		call{path: "/v1/chat/completions", body: `{"model":"m","messages":[{"role":"user","content":"one two three"}]}`},
		call{path: "/v1/chat/completions", body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"one two three"}]}`},
	},
	providersim.KindAzureOpenAI: {
		call{path: "/openai/deployments/m/chat/completions?api-version=2024-10-21", body: `{"messages":[{"role":"user","content":"one two three"}]}`},
		call{path: "/openai/deployments/m/chat/completions?api-version=2024-10-21", body: `{"stream":true,"messages":[{"role":"user","content":"one two three"}]}`},
	},
	providersim.KindOpenAICompatible: {
		call{path: "/v1/chat/completions", body: `{"model":"m","messages":[{"role":"user","content":"one two three"}]}`},
		call{path: "/v1/chat/completions", body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"one two three"}]}`},
	},
	providersim.KindAnthropic: {
		call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"one two three"}]}`},
		call{path: "/v1/messages", header: anthropicHeaders, body: `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"one two three"}]}`},
	},
	providersim.KindGemini: {
		call{path: "/v1beta/models/m:generateContent", body: `{"contents":[{"parts":[{"text":"one two three"}]}]}`},
		call{path: "/v1beta/models/m:streamGenerateContent?alt=sse", body: `{"contents":[{"parts":[{"text":"one two three"}]}]}`},
	},
}

// finalEvent is how each kind marks the end of a stream.
var finalEvent = map[providersim.Kind]string{
	providersim.KindOpenAI:           "data: [DONE]",
	providersim.KindAzureOpenAI:      "data: [DONE]",
	providersim.KindOpenAICompatible: "data: [DONE]",
	providersim.KindAnthropic:        "event: message_stop",
	providersim.KindGemini:           `"finishReason"`,
}

// wantEvents is the length of each kind's stream for the kindCalls reply.
var wantEvents = map[providersim.Kind]int{
	providersim.KindOpenAI:           9,  // role, 6 words, finish, [DONE]
	providersim.KindAzureOpenAI:      10, // plus the prompt-filter chunk
	providersim.KindOpenAICompatible: 9,
	providersim.KindAnthropic:        12, // start, block start, ping, 6 deltas, block stop, delta, stop
	providersim.KindGemini:           6,  // one per word
}

func sseEvents(body string) []string {
	var out []string
	for _, ev := range strings.Split(body, "\n\n") {
		if strings.TrimSpace(ev) != "" {
			out = append(out, ev)
		}
	}
	return out
}

func setFault(t *testing.T, sim *providersim.Sim, name string, f providersim.Fault) {
	t.Helper()
	if err := sim.SetFault(name, f); err != nil {
		t.Fatalf("SetFault(%s, %+v): %v", name, f, err)
	}
}

func TestStreamsEndWithTheFinalEvent(t *testing.T) {
	for kind, c := range kindCalls {
		t.Run(string(kind), func(t *testing.T) {
			sim, _ := startKind(t, kind)
			_, body := do(t, sim.URL(string(kind)), c.stream)
			events := sseEvents(body)
			if len(events) != wantEvents[kind] {
				t.Errorf("got %d events, want %d:\n%s", len(events), wantEvents[kind], body)
			}
			if !strings.Contains(events[len(events)-1], finalEvent[kind]) {
				t.Errorf("got last event %q, want it to hold %q", events[len(events)-1], finalEvent[kind])
			}
		})
	}
}

func TestFaultDown(t *testing.T) {
	for kind, c := range kindCalls {
		t.Run(string(kind), func(t *testing.T) {
			sim, _ := startSim(t, providersim.ProviderConfig{Name: "down", Kind: kind}, providersim.ProviderConfig{Name: "up", Kind: kind})
			addr := sim.Addr("down")
			// A pooled keep-alive connection must not survive the outage.
			client := &http.Client{}
			post := func(base string) (int, error) {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+c.plain.path, strings.NewReader(c.plain.body))
				for k, v := range c.plain.header {
					req.Header.Set(k, v)
				}
				resp, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}
			if code, err := post(sim.URL("down")); err != nil || code != 200 {
				t.Fatalf("before the fault: got %d, %v; want 200", code, err)
			}
			setFault(t, sim, "down", providersim.Fault{Mode: providersim.FaultDown})
			if _, err := post(sim.URL("down")); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("while down: got %v, want connection refused", err)
			}
			if code, err := post(sim.URL("up")); err != nil || code != 200 {
				t.Errorf("other provider while one is down: got %d, %v; want 200", code, err)
			}
			if err := sim.ClearFault("down"); err != nil {
				t.Fatalf("ClearFault: %v", err)
			}
			if got := sim.Addr("down"); got != addr {
				t.Errorf("got address %s after coming back, want %s", got, addr)
			}
			if code, err := post(sim.URL("down")); err != nil || code != 200 {
				t.Errorf("after clearing: got %d, %v; want 200", code, err)
			}
			st, _ := sim.Stats("down")
			if st.Requests != 2 {
				t.Errorf("got %d requests recorded, want 2 (refused connections are not requests)", st.Requests)
			}
		})
	}
}

func TestFaultDown503(t *testing.T) {
	sim, _ := startKind(t, providersim.KindAnthropic)
	setFault(t, sim, "anthropic", providersim.Fault{Mode: providersim.FaultDown503})
	resp, body := do(t, sim.URL("anthropic"), kindCalls[providersim.KindAnthropic].plain)
	got := []string{resp.Status, resp.Header.Get("Content-Type"), body}
	want := []string{"503 Service Unavailable", "text/plain; charset=utf-8", "no healthy upstream"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("down_503 response mismatch (-want +got):\n%s", diff)
	}
}

// TestFaultStatusNative checks the native error each kind sends for an
// injected status: the body an SDK parses and the retry headers it honours.
func TestFaultStatusNative(t *testing.T) {
	tests := []struct {
		name        string
		kind        providersim.Kind
		fault       providersim.Fault
		wantHeaders map[string]string // "" means absent
		wantBody    string
	}{
		{
			name: "openai 429", kind: providersim.KindOpenAI, fault: providersim.Fault{Status: 429},
			wantHeaders: map[string]string{"retry-after": "1", "retry-after-ms": ""},
			wantBody:    `{"error":{"message":"Rate limit reached for requests. Please try again in 1s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
		},
		{
			name: "openai 500", kind: providersim.KindOpenAI, fault: providersim.Fault{Status: 500},
			wantHeaders: map[string]string{"retry-after": ""},
			wantBody:    `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
		},
		{
			name: "openai 503", kind: providersim.KindOpenAI, fault: providersim.Fault{Status: 503, RetryAfter: providersim.Duration(2500 * time.Millisecond)},
			wantHeaders: map[string]string{"retry-after": "3"},
			wantBody:    `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`,
		},
		{
			name: "openai 401", kind: providersim.KindOpenAI, fault: providersim.Fault{Status: 401},
			wantBody: `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
		},
		{
			name: "azure 429", kind: providersim.KindAzureOpenAI, fault: providersim.Fault{Status: 429, RetryAfter: providersim.Duration(1500 * time.Millisecond)},
			wantHeaders: map[string]string{"retry-after": "2", "retry-after-ms": "1500"},
			wantBody:    `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 2 seconds."}}`,
		},
		{
			name: "compatible 503", kind: providersim.KindOpenAICompatible, fault: providersim.Fault{Status: 503},
			wantHeaders: map[string]string{"retry-after": "1"},
			wantBody:    `{"object":"error","message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":503}`,
		},
		{
			name: "anthropic 529", kind: providersim.KindAnthropic, fault: providersim.Fault{Status: 529},
			wantHeaders: map[string]string{"retry-after": ""},
			wantBody:    `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_sim00000001"}`,
		},
		{
			name: "anthropic 429", kind: providersim.KindAnthropic, fault: providersim.Fault{Status: 429},
			wantHeaders: map[string]string{"retry-after": "1"},
			wantBody:    `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_sim00000001"}`,
		},
		{
			name: "anthropic 500", kind: providersim.KindAnthropic, fault: providersim.Fault{Status: 500},
			wantBody: `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_sim00000001"}`,
		},
		{
			name: "gemini 429", kind: providersim.KindGemini, fault: providersim.Fault{Status: 429, RetryAfter: providersim.Duration(17 * time.Second)},
			wantHeaders: map[string]string{"retry-after": ""},
			wantBody: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[` +
				`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel","quotaMetric":"generativelanguage.googleapis.com/generate_content_requests"}]},` +
				`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`,
		},
		{
			name: "gemini 503", kind: providersim.KindGemini, fault: providersim.Fault{Status: 503},
			wantBody: `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
		},
		{
			name: "gemini 500", kind: providersim.KindGemini, fault: providersim.Fault{Status: 500},
			wantBody: `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, _ := startKind(t, tt.kind)
			tt.fault.Mode = providersim.FaultStatus
			setFault(t, sim, string(tt.kind), tt.fault)
			resp, body := do(t, sim.URL(string(tt.kind)), kindCalls[tt.kind].plain)
			if resp.StatusCode != tt.fault.Status {
				t.Errorf("got status %d, want %d", resp.StatusCode, tt.fault.Status)
			}
			for k, want := range tt.wantHeaders {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("got header %s %q, want %q", k, got, want)
				}
			}
			var got, want any
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, body)
			}
			if err := json.Unmarshal([]byte(tt.wantBody), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFaultStatusCustomBody(t *testing.T) {
	tests := []struct {
		name            string
		body            string
		wantContentType string
	}{
		{"text", "I'm a teapot", "text/plain; charset=utf-8"},
		{"json", `{"error":"custom"}`, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, _ := startKind(t, providersim.KindOpenAI)
			setFault(t, sim, "openai", providersim.Fault{Mode: providersim.FaultStatus, Status: 418, Body: tt.body, Headers: map[string]string{"X-Fault": "yes"}})
			resp, body := do(t, sim.URL("openai"), kindCalls[providersim.KindOpenAI].plain)
			got := []string{resp.Status, resp.Header.Get("Content-Type"), resp.Header.Get("X-Fault"), body}
			want := []string{"418 I'm a teapot", tt.wantContentType, "yes", tt.body}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("custom status response mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFaultCount(t *testing.T) {
	sim, _ := startKind(t, providersim.KindGemini)
	setFault(t, sim, "gemini", providersim.Fault{Mode: providersim.FaultStatus, Status: 500, Count: 2})
	var got []int
	for range 4 {
		resp, _ := do(t, sim.URL("gemini"), kindCalls[providersim.KindGemini].plain)
		got = append(got, resp.StatusCode)
	}
	if diff := cmp.Diff([]int{500, 500, 200, 200}, got); diff != "" {
		t.Errorf("statuses mismatch (-want +got):\n%s", diff)
	}
	st, _ := sim.Stats("gemini")
	if diff := cmp.Diff(map[int]int{500: 2, 200: 2}, st.ByStatus); diff != "" {
		t.Errorf("ByStatus mismatch (-want +got):\n%s", diff)
	}
}

func TestFaultLatency(t *testing.T) {
	for kind, c := range kindCalls {
		t.Run(string(kind), func(t *testing.T) {
			sim, sleeps := startKind(t, kind)
			setFault(t, sim, string(kind), providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(750 * time.Millisecond), Count: 1})
			for range 2 {
				if resp, body := do(t, sim.URL(string(kind)), c.plain); resp.StatusCode != 200 {
					t.Fatalf("got status %d, want 200; body %s", resp.StatusCode, body)
				}
			}
			if diff := cmp.Diff([]time.Duration{750 * time.Millisecond}, sleeps.delays()); diff != "" {
				t.Errorf("delays mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFaultSlowStream(t *testing.T) {
	for kind, c := range kindCalls {
		t.Run(string(kind), func(t *testing.T) {
			sim, sleeps := startKind(t, kind)
			const d = 40 * time.Millisecond
			setFault(t, sim, string(kind), providersim.Fault{Mode: providersim.FaultSlowStream, Delay: providersim.Duration(d), Count: 1})
			// A plain request neither slows down nor uses up the count.
			do(t, sim.URL(string(kind)), c.plain)
			if got := sleeps.delays(); len(got) != 0 {
				t.Fatalf("plain request slept %v, want no delay", got)
			}
			_, body := do(t, sim.URL(string(kind)), c.stream)
			if n := len(sseEvents(body)); n != wantEvents[kind] {
				t.Errorf("got %d events, want the whole stream of %d", n, wantEvents[kind])
			}
			want := make([]time.Duration, wantEvents[kind]-1)
			for i := range want {
				want[i] = d
			}
			do(t, sim.URL(string(kind)), c.stream)
			if diff := cmp.Diff(want, sleeps.delays()); diff != "" {
				t.Errorf("delays mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFaultDripStream: a dripping stream sends every event but the final
// one, Delay apart, then a keep-alive every Delay for as long as the
// client reads.
func TestFaultDripStream(t *testing.T) {
	for kind, c := range kindCalls {
		t.Run(string(kind), func(t *testing.T) {
			sim, sleeps := startKind(t, kind)
			const d = 40 * time.Millisecond
			setFault(t, sim, string(kind), providersim.Fault{Mode: providersim.FaultDripStream, Delay: providersim.Duration(d)})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, sim.URL(string(kind))+c.stream.path, strings.NewReader(c.stream.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			for k, v := range c.stream.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			const beats = 3
			beat := ": keep-alive\n\n"
			if resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("content type %q, want an SSE stream", resp.Header.Get("Content-Type"))
			}
			var body strings.Builder
			buf := make([]byte, 512)
			for strings.Count(body.String(), beat) < beats {
				n, err := resp.Body.Read(buf)
				body.Write(buf[:n])
				if err != nil {
					t.Fatalf("the stream ended (%v) after %q", err, body.String())
				}
			}
			cancel()
			before, _, _ := strings.Cut(body.String(), beat)
			events := sseEvents(before)
			if len(events) != wantEvents[kind]-1 {
				t.Errorf("got %d events before the keep-alives, want all but the final one of %d", len(events), wantEvents[kind])
			}
			for i, got := range sleeps.delays() {
				if got != d {
					t.Fatalf("wait %d is %v, want %v", i, got, d)
				}
			}
			if n := len(sleeps.delays()); n < wantEvents[kind]-2+beats {
				t.Errorf("%d waits, want one between events and one before each keep-alive", n)
			}
		})
	}
}

func TestFaultCutStream(t *testing.T) {
	tests := []struct {
		name   string
		chunks int
		want   func(total int) int
	}{
		{"after two events", 2, func(int) int { return 2 }},
		{"before any event", 0, func(int) int { return 0 }},
		{"never the final event", 1000, func(total int) int { return total - 1 }},
	}
	for kind, c := range kindCalls {
		for _, tt := range tests {
			t.Run(string(kind)+"/"+tt.name, func(t *testing.T) {
				sim, _ := startKind(t, kind)
				setFault(t, sim, string(kind), providersim.Fault{Mode: providersim.FaultCutStream, Chunks: tt.chunks})
				resp, body, err := tryDo(t, sim.URL(string(kind)), c.stream)
				if err == nil {
					t.Fatalf("got a complete body, want the connection cut:\n%s", body)
				}
				if resp.StatusCode != 200 {
					t.Errorf("got status %d, want the 200 the stream started with", resp.StatusCode)
				}
				events := sseEvents(body)
				if want := tt.want(wantEvents[kind]); len(events) != want {
					t.Errorf("got %d events before the cut, want %d:\n%s", len(events), want, body)
				}
				if strings.Contains(body, finalEvent[kind]) {
					t.Errorf("cut stream holds the final event %q", finalEvent[kind])
				}
			})
		}
	}
}

func TestFaultMalformed(t *testing.T) {
	for kind, c := range kindCalls {
		for _, stream := range []bool{false, true} {
			name := string(kind) + "/plain"
			req := c.plain
			if stream {
				name, req = string(kind)+"/stream", c.stream
			}
			t.Run(name, func(t *testing.T) {
				sim, _ := startKind(t, kind)
				setFault(t, sim, string(kind), providersim.Fault{Mode: providersim.FaultMalformed})
				resp, body := do(t, sim.URL(string(kind)), req)
				if resp.StatusCode != 200 {
					t.Errorf("got status %d, want 200", resp.StatusCode)
				}
				if !stream {
					if json.Valid([]byte(body)) {
						t.Errorf("got valid JSON %s, want garbage", body)
					}
					return
				}
				if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("got Content-Type %q, want text/event-stream", ct)
				}
				valid := true
				for _, ev := range sseEvents(body) {
					for _, line := range strings.Split(ev, "\n") {
						data, ok := strings.CutPrefix(line, "data: ")
						if ok && data != "[DONE]" {
							valid = valid && json.Valid([]byte(data))
						}
					}
				}
				if valid {
					t.Errorf("every SSE data payload is valid JSON, want garbage:\n%s", body)
				}
			})
		}
	}
}

func TestFaultMalformedCustomBody(t *testing.T) {
	sim, _ := startKind(t, providersim.KindOpenAI)
	setFault(t, sim, "openai", providersim.Fault{Mode: providersim.FaultMalformed, Body: "<html>oops</html>"})
	_, body := do(t, sim.URL("openai"), kindCalls[providersim.KindOpenAI].plain)
	if body != "<html>oops</html>" {
		t.Errorf("got body %q, want the fault's body", body)
	}
}

func TestQuotaHeaders(t *testing.T) {
	seven := int64(7)
	tests := []struct {
		name  string
		kind  providersim.Kind
		fault *providersim.Fault
		want  map[string]string
	}{
		{
			name: "openai default", kind: providersim.KindOpenAI,
			want: map[string]string{"x-ratelimit-limit-requests": "10000", "x-ratelimit-remaining-requests": "9999", "x-ratelimit-remaining-tokens": "1000000", "x-ratelimit-reset-requests": "1s"},
		},
		{
			name: "openai quota_remaining", kind: providersim.KindOpenAI, fault: &providersim.Fault{QuotaRemaining: &seven},
			want: map[string]string{"x-ratelimit-remaining-requests": "7", "x-ratelimit-remaining-tokens": "7"},
		},
		{
			name: "azure quota_remaining with latency", kind: providersim.KindAzureOpenAI, fault: &providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(time.Millisecond), QuotaRemaining: &seven},
			want: map[string]string{"x-ratelimit-remaining-requests": "7", "x-ratelimit-remaining-tokens": "7"},
		},
		{
			name: "anthropic default", kind: providersim.KindAnthropic,
			want: map[string]string{"anthropic-ratelimit-requests-remaining": "9999", "anthropic-ratelimit-tokens-remaining": "1000000", "anthropic-ratelimit-requests-reset": "2026-01-02T03:05:05Z"},
		},
		{
			name: "anthropic quota_remaining", kind: providersim.KindAnthropic, fault: &providersim.Fault{QuotaRemaining: &seven},
			want: map[string]string{"anthropic-ratelimit-requests-remaining": "7", "anthropic-ratelimit-input-tokens-remaining": "7", "anthropic-ratelimit-output-tokens-remaining": "7"},
		},
		{
			name: "gemini sends none", kind: providersim.KindGemini, fault: &providersim.Fault{QuotaRemaining: &seven},
			want: map[string]string{"x-ratelimit-remaining-requests": "", "anthropic-ratelimit-requests-remaining": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, _ := startKind(t, tt.kind)
			if tt.fault != nil {
				setFault(t, sim, string(tt.kind), *tt.fault)
			}
			resp, _ := do(t, sim.URL(string(tt.kind)), kindCalls[tt.kind].plain)
			for k, want := range tt.want {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("got %s %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestRemainingQuotaFallsWithUse(t *testing.T) {
	sim, _ := startKind(t, providersim.KindOpenAI)
	do(t, sim.URL("openai"), kindCalls[providersim.KindOpenAI].plain)
	resp, _ := do(t, sim.URL("openai"), kindCalls[providersim.KindOpenAI].plain)
	// The first reply used 7 prompt and 6 completion tokens.
	got := []string{resp.Header.Get("x-ratelimit-remaining-requests"), resp.Header.Get("x-ratelimit-remaining-tokens")}
	if diff := cmp.Diff([]string{"9998", "999987"}, got); diff != "" {
		t.Errorf("remaining requests/tokens mismatch (-want +got):\n%s", diff)
	}
}

// A long run must not exhaust the simulated quota: like a real provider's,
// it counts per minute, so a gateway that reads the headers keeps routing
// to a simulator that has served more than a minute's limit in all.
func TestRemainingQuotaRestartsEachMinute(t *testing.T) {
	var mu sync.Mutex
	now := fixedNow
	sim, err := providersim.Start(t.Context(), providersim.Config{
		Providers:   []providersim.ProviderConfig{{Kind: providersim.KindOpenAI, Name: "openai"}},
		ControlAddr: "127.0.0.1:0",
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		},
		Sleep: (&sleepRecorder{}).sleep,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { sim.Close() })
	remaining := func() []string {
		resp, _ := do(t, sim.URL("openai"), kindCalls[providersim.KindOpenAI].plain)
		return []string{resp.Header.Get("x-ratelimit-remaining-requests"), resp.Header.Get("x-ratelimit-remaining-tokens")}
	}
	remaining()
	mu.Lock()
	now = now.Add(59 * time.Second)
	mu.Unlock()
	if diff := cmp.Diff([]string{"9998", "999987"}, remaining()); diff != "" {
		t.Errorf("within the minute (-want +got):\n%s", diff)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	if diff := cmp.Diff([]string{"9999", "1000000"}, remaining()); diff != "" {
		t.Errorf("in the next minute (-want +got):\n%s", diff)
	}
}

func TestSetFaultRejects(t *testing.T) {
	tests := []struct {
		name    string
		fault   providersim.Fault
		wantErr string
	}{
		{"unknown mode", providersim.Fault{Mode: "explode"}, `mode "explode": unknown`},
		{"empty mode", providersim.Fault{}, "mode: required unless quota_remaining is set"},
		{"status without status", providersim.Fault{Mode: providersim.FaultStatus}, "status 0"},
		{"latency without delay", providersim.Fault{Mode: providersim.FaultLatency}, "delay: required"},
		{"slow stream without delay", providersim.Fault{Mode: providersim.FaultSlowStream}, "delay: required"},
		{"down with a count", providersim.Fault{Mode: providersim.FaultDown, Count: 1}, "cannot be counted"},
		{"negative count", providersim.Fault{Mode: providersim.FaultMalformed, Count: -1}, "must not be negative"},
		{"negative chunks", providersim.Fault{Mode: providersim.FaultCutStream, Chunks: -1}, "must not be negative"},
	}
	sim, _ := startKind(t, providersim.KindOpenAI)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sim.SetFault("openai", tt.fault)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	t.Run("unknown provider", func(t *testing.T) {
		if err := sim.SetFault("nope", providersim.Fault{Mode: providersim.FaultDown}); !errors.Is(err, providersim.ErrUnknownProvider) {
			t.Errorf("got %v, want ErrUnknownProvider", err)
		}
	})
}

func TestFaultDrip(t *testing.T) {
	for kind, c := range kindCalls {
		t.Run(string(kind), func(t *testing.T) {
			sim, sleeps := startKind(t, kind)
			const d = 40 * time.Millisecond
			setFault(t, sim, string(kind), providersim.Fault{Mode: providersim.FaultDrip, Delay: providersim.Duration(d), Count: 1})
			// A stream neither drips nor uses up the count.
			do(t, sim.URL(string(kind)), c.stream)
			if got := sleeps.delays(); len(got) != 0 {
				t.Fatalf("stream slept %v, want no delay", got)
			}
			_, body := do(t, sim.URL(string(kind)), c.plain)
			if !json.Valid([]byte(body)) {
				t.Fatalf("dripped body is not the whole JSON answer: %q", body)
			}
			if got := sleeps.delays(); len(got) != len(body)-1 {
				t.Errorf("slept %d times, want one wait between each of the %d bytes", len(got), len(body))
			}
			_, again := do(t, sim.URL(string(kind)), c.plain)
			if !json.Valid([]byte(again)) || len(sleeps.delays()) != len(body)-1 {
				t.Errorf("the fault's count of 1 did not clear it")
			}
		})
	}
}
