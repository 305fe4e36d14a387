package cache

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/cache/cachespec"
	"github.com/switchyard/switchyard/state/answercache"
)

func exchange(t *testing.T, tenant, body string, header ...string) *filters.Exchange {
	t.Helper()
	chat, err := openaiapi.ParseChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	x := &filters.Exchange{ID: "r1", Body: []byte(body), Chat: chat,
		Route:  &policy.Route{Name: "chat", API: policy.APIChatCompletions},
		Caller: filters.Caller{Tenant: &policy.Tenant{Name: tenant}}}
	for i := 0; i+1 < len(header); i += 2 {
		x.Header = append(x.Header, filters.Header{Key: header[i], Value: header[i+1]})
	}
	return x
}

func TestKey(t *testing.T) {
	t.Parallel()
	f := newFilter(cachespec.Default(), nil, nil, time.Now)
	base := `{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi"}]}`
	k0, ok := f.keyOf(exchange(t, "acme", base))
	if !ok {
		t.Fatal("a deterministic request is not cacheable")
	}
	for _, tc := range []struct {
		name, tenant, body string
		header             []string
		cacheable, same    bool
	}{
		{name: "key order and spacing", tenant: "acme", body: `{ "messages":[{"content":"hi","role":"user"}], "temperature":0, "model":"m" }`, cacheable: true, same: true},
		{name: "streamed, with an end user", tenant: "acme", body: `{"model":"m","temperature":0,"stream":true,"stream_options":{"include_usage":true},"user":"u9","messages":[{"role":"user","content":"hi"}]}`, cacheable: true, same: true},
		{name: "another tenant", tenant: "beta", body: base, cacheable: true},
		{name: "another message", tenant: "acme", body: strings.Replace(base, "hi", "ho", 1), cacheable: true},
		{name: "another sampling parameter", tenant: "acme", body: strings.Replace(base, `"temperature":0`, `"temperature":0,"top_p":0.5`, 1), cacheable: true},
		{name: "tools", tenant: "acme", body: strings.Replace(base, `"temperature":0`, `"temperature":0,"tools":[{"type":"function","function":{"name":"f"}}]`, 1), cacheable: true},
		{name: "no temperature", tenant: "acme", body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{name: "no temperature, asked for", tenant: "acme", body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, header: []string{"x-switchyard-cache", "on"}, cacheable: true},
		{name: "opted out", tenant: "acme", body: base, header: []string{"x-switchyard-cache", "off"}},
		{name: "several choices", tenant: "acme", body: strings.Replace(base, `"temperature":0`, `"temperature":0,"n":2`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, ok := f.keyOf(exchange(t, tc.tenant, tc.body, tc.header...))
			if ok != tc.cacheable || (ok && (k == k0) != tc.same) {
				t.Errorf("cacheable %v, same key %v; want %v, %v", ok, k == k0, tc.cacheable, tc.same)
			}
		})
	}
	only := cachespec.Default()
	only.Tenants = []string{"beta"}
	if _, ok := newFilter(only, nil, nil, time.Now).keyOf(exchange(t, "acme", base)); ok {
		t.Error("a route caching for beta only cached acme's request")
	}
}

func TestSSE(t *testing.T) {
	t.Parallel()
	body := `{"id":"c1","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	out := string(sse([]byte(body), true))
	events := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
	if len(events) != 4 || events[3] != "data: [DONE]" {
		t.Fatalf("events %q", events)
	}
	var first, last struct {
		ID      string
		Object  string
		Choices []struct {
			Delta struct {
				Role, Content string
				ToolCalls     []struct{ Index int } `json:"tool_calls"`
			}
			FinishReason *string `json:"finish_reason"`
		}
		Usage *struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal([]byte(strings.TrimPrefix(events[0], "data: ")), &first)
	_ = json.Unmarshal([]byte(strings.TrimPrefix(events[2], "data: ")), &last)
	d := first.Choices[0].Delta
	if first.ID != "c1" || first.Object != "chat.completion.chunk" || d.Role != "assistant" || d.Content != "hello" || len(d.ToolCalls) != 1 || first.Choices[0].FinishReason != nil {
		t.Errorf("first chunk %s", events[0])
	}
	if !strings.Contains(events[1], `"finish_reason":"tool_calls"`) || last.Usage == nil || last.Usage.TotalTokens != 5 || len(last.Choices) != 0 {
		t.Errorf("finish %s, usage %s", events[1], events[2])
	}
	if n := strings.Count(string(sse([]byte(body), false)), "data: "); n != 3 {
		t.Errorf("without include_usage: %d events, want 3", n)
	}
}

func TestMemoryBounded(t *testing.T) {
	t.Parallel()
	m := answercache.NewMemory(10 << 10)
	now := time.Now()
	for i := range 100 {
		m.Put(strings.Repeat("k", 8)+string(rune('a'+i%26))+string(rune('a'+i/26)), answercache.Entry{Body: make([]byte, 1000), Stored: now})
	}
	if b := m.Bytes(); b > 10<<10 || b < 8<<10 {
		t.Errorf("memory holds %d bytes, bound 10 KiB", b)
	}
	if _, ok := m.Get("kkkkkkkkvd", now, time.Minute); !ok {
		t.Error("the newest entry was evicted")
	}
	if _, ok := m.Get("kkkkkkkkaa", now, time.Minute); ok {
		t.Error("the oldest entry outlived the bound")
	}
	if _, ok := m.Get("kkkkkkkkvd", now.Add(2*time.Minute), time.Minute); ok {
		t.Error("an entry older than the asked age was served")
	}
}

// TestStaleWindow: when the router finds every provider down, degraded
// mode serves an answer up to stale_for past its ttl, marked degraded, and
// nothing older; only a 503 is rescued, and stale_for 0 turns it off.
func TestStaleWindow(t *testing.T) {
	t.Parallel()
	stored := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	args := cachespec.Default() // ttl 5m, stale_for 1h
	down := openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "", "every provider is down")
	const body = `{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name     string
		staleFor time.Duration
		age      time.Duration
		refusal  error
		want     bool
	}{
		{name: "fresh", age: time.Minute, refusal: down, want: true},
		{name: "past the ttl, within stale_for", age: args.TTL + args.StaleFor - time.Second, refusal: down, want: true},
		{name: "past stale_for", age: args.TTL + args.StaleFor + time.Second, refusal: down},
		{name: "a refusal that is not every provider down", age: time.Minute, refusal: openaiapi.Errorf(http.StatusTooManyRequests, openaiapi.TypeRateLimit, "", "slow down")},
		{name: "degraded mode off", staleFor: -1, age: time.Minute, refusal: down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := args
			if tc.staleFor < 0 {
				a.StaleFor = 0
			}
			now := stored.Add(tc.age)
			f := newFilter(a, nil, slog.Default(), func() time.Time { return now })
			x := exchange(t, "acme", body)
			key, _ := f.keyOf(x)
			f.mem.Put(key, answercache.Entry{Body: []byte(`{"object":"chat.completion"}`), Model: "m", PromptTokens: 3, CompletionTokens: 2, CostMicros: 9, Stored: stored})
			got := f.Rescue(context.Background(), x, tc.refusal)
			reply := x.TakeReply()
			if got != tc.want || (reply != nil) != tc.want {
				t.Fatalf("rescued %v with reply %+v; want %v", got, reply, tc.want)
			}
			if !tc.want {
				return
			}
			var degraded bool
			for _, h := range reply.Header {
				degraded = degraded || (h.Key == filters.HeaderDegraded && h.Value == "true")
			}
			if reply.Status != http.StatusOK || !degraded || x.Cached.How != "stale" || x.Cached.SavedMicros != 0 || x.Usage.CompletionTokens != 2 {
				t.Errorf("degraded reply %d %+v, cached %+v, usage %+v; want 200 marked degraded, saving nothing, the answer's tokens", reply.Status, reply.Header, x.Cached, x.Usage)
			}
		})
	}
}

// TestHitSavesTheAnswersCost: a fresh answer is served on the request
// side as a hit that saved what the answer cost when it was made.
func TestHitSavesTheAnswersCost(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := newFilter(cachespec.Default(), nil, slog.Default(), func() time.Time { return now })
	x := exchange(t, "acme", `{"model":"m","temperature":0,"messages":[{"role":"user","content":"hi"}]}`)
	key, _ := f.keyOf(x)
	f.mem.Put(key, answercache.Entry{Body: []byte(`{"object":"chat.completion"}`), Model: "m", PromptTokens: 3, CompletionTokens: 2, CostMicros: 9, Stored: now.Add(-time.Second)})
	if err := f.RequestBody(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	if reply := x.TakeReply(); reply == nil || reply.Status != http.StatusOK {
		t.Fatalf("reply %+v, want the cached answer", reply)
	}
	if x.Cached != (filters.Cached{How: "hit", Model: "m", SavedMicros: 9}) || x.Usage.CostMicros != 0 || x.Usage.PromptTokens != 3 {
		t.Errorf("cached %+v, usage %+v; want a hit of m saving 9 micro-USD, at no cost", x.Cached, x.Usage)
	}
}

// TestCollect: a stream of chunks becomes the completion it spells out —
// the inverse of sse, and of a provider's stream cut into many deltas —
// and a stream that is not whole becomes nothing.
func TestCollect(t *testing.T) {
	t.Parallel()
	const whole = `{"id":"c1","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`
	usage := []byte(`{"prompt_tokens":9,"completion_tokens":9,"total_tokens":18}`)
	chunk := func(s string) string { return "data: " + s + "\n\n" }
	delta := func(d string, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return chunk(`{"id":"c2","object":"chat.completion.chunk","created":8,"model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + f + `}]}`)
	}
	pieces := delta(`{"role":"assistant","content":""}`, "") + delta(`{"content":"Hel"}`, "") + delta(`{"content":"lo, "}`, "") +
		delta(`{"tool_calls":[{"index":0,"id":"t9","type":"function","function":{"name":"look","arguments":"{\"q\":"}}]}`, "") +
		delta(`{"tool_calls":[{"index":0,"function":{"arguments":"\"x\"}"}}]}`, "") + delta(`{}`, "tool_calls")
	for _, tc := range []struct {
		name   string
		stream string
		want   string // "" for nothing
	}{
		{name: "what sse made of a completion", stream: string(sse([]byte(whole), true)), want: whole},
		{name: "without its usage chunk: the usage given", stream: string(sse([]byte(whole), false)),
			want: strings.Replace(whole, `"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}`, `"usage":`+string(usage), 1)},
		{name: "a provider's many deltas", stream: pieces + "data: [DONE]\n\n",
			want: `{"id":"c2","object":"chat.completion","created":8,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello, ","tool_calls":[{"id":"t9","type":"function","function":{"name":"look","arguments":"{\"q\":\"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":` + string(usage) + `}`},
		{name: "no [DONE]", stream: pieces},
		{name: "an error event", stream: delta(`{"content":"Hel"}`, "") + chunk(`{"error":{"message":"upstream broke off","type":"upstream_error"}}`) + "data: [DONE]\n\n"},
		{name: "no finish reason", stream: delta(`{"content":"Hel"}`, "") + "data: [DONE]\n\n"},
		{name: "not JSON", stream: "data: {nope\n\ndata: [DONE]\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := collect([]byte(tc.stream), usage)
			if tc.want == "" {
				if ok {
					t.Fatalf("collected %s from a stream that is not whole", got)
				}
				return
			}
			if !ok {
				t.Fatal("nothing collected")
			}
			var g, w any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal([]byte(tc.want), &w)
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("completion (-want +got):\n%s", d)
			}
		})
	}
}
