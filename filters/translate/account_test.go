package translate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

const accountPolicy = `
providers:
  - {name: oa, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: an, kind: anthropic, base_url: "http://127.0.0.1:2"}
models:
  - {name: gpt, provider: oa, context_window: 100000, max_output_tokens: 4000, capabilities: [chat, stream], price_usd_per_mtok: {input: 2.5, output: 10}}
  - {name: claude, provider: an, context_window: 100000, max_output_tokens: 4000, capabilities: [chat, stream], price_usd_per_mtok: {input: 3, output: 15, cached_input: 0.3, cache_write: 3.75, cache_write_1h: 6}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions}
`

const (
	oaRole  = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	oaHello = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}` + "\n\n"
	oaThere = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"content":" there, friend"},"finish_reason":null}]}` + "\n\n"
	oaStop  = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	oaUsage = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":5,"total_tokens":45}}` + "\n\n" +
		"data: [DONE]\n\n"
	anStart = "event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude","content":[],"usage":{"input_tokens":400,"cache_read_input_tokens":100,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n"
	anDelta = "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"A fairly long sentence of about forty bytes."}}` + "\n\n"
	// anWrote and anWroteByLifetime start answers whose prompt wrote 200
	// tokens to the cache, the second saying for how long; anEnd ends
	// them with 10 output tokens.
	anWrote           = "event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude","content":[],"usage":{"input_tokens":400,"cache_read_input_tokens":100,"cache_creation_input_tokens":200,"output_tokens":1}}}` + "\n\n" + anBlock
	anWroteByLifetime = "event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude","content":[],"usage":{"input_tokens":400,"cache_read_input_tokens":100,"cache_creation_input_tokens":200,"cache_creation":{"ephemeral_5m_input_tokens":50,"ephemeral_1h_input_tokens":150},"output_tokens":1}}}` + "\n\n" + anBlock
	anBlock           = "event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n"
	anEnd             = "event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":10}}` + "\n\n" +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
)

// TestAccounting follows one answer through the translate filter, chunk by
// chunk, and checks what the usage filter will record: the provider's
// count when the answer ended normally, an estimate marked as such when it
// did not, and when the first generated token left for the client.
func TestAccounting(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(accountPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"Say hello to my friend, please."}]}`
	chat, perr := openaiapi.ParseChatRequest([]byte(body))
	if perr != nil {
		t.Fatal(perr)
	}
	prompt := openaiapi.EstimatePromptTokens(chat)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name  string
		model string
		// chunks are the provider's bytes; each arrives one second after
		// the previous.
		chunks []string
		eos    bool
		cause  error
		// hour is set when the request asked to cache for an hour.
		hour bool
		// cached is set when the response cache replaced the answer
		// after the chunks (degraded mode), with this usage.
		cached  *filters.Usage
		want    filters.Usage
		wantTTF time.Duration // 0: no token was sent
		wantErr string
	}{
		{
			name: "complete stream: the provider's count", model: "gpt",
			chunks: []string{oaRole, oaHello, oaThere, oaStop + oaUsage}, eos: true,
			want:    filters.Usage{Known: true, PromptTokens: 40, CompletionTokens: 5, CostMicros: 150},
			wantTTF: 2 * time.Second,
		},
		{
			name: "client left mid-stream: estimated from what it was sent", model: "gpt",
			chunks: []string{oaRole, oaHello, oaThere}, cause: filters.ErrClientGone,
			want: filters.Usage{
				Known: true, PromptTokens: prompt, CompletionTokens: openaiapi.TextTokens("Hello there, friend"), Estimated: true,
				CostMicros: Cost(&policy.Model{Price: policy.Price{InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000}}, filters.Usage{PromptTokens: prompt, CompletionTokens: openaiapi.TextTokens("Hello there, friend")}),
			},
			wantTTF: 2 * time.Second,
		},
		{
			name: "client left before any token", model: "gpt",
			chunks: []string{oaRole}, cause: filters.ErrClientGone,
			want: filters.Usage{Known: true, PromptTokens: prompt, Estimated: true,
				CostMicros: Cost(&policy.Model{Price: policy.Price{InputPerMTok: 2_500_000}}, filters.Usage{PromptTokens: prompt})},
		},
		{
			name: "provider broke off: estimated, and the error event noted", model: "gpt",
			chunks: []string{oaRole, oaHello}, eos: true,
			want: filters.Usage{Known: true, PromptTokens: prompt, CompletionTokens: openaiapi.TextTokens("Hello"), Estimated: true,
				CostMicros: Cost(&policy.Model{Price: policy.Price{InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000}}, filters.Usage{PromptTokens: prompt, CompletionTokens: openaiapi.TextTokens("Hello")})},
			wantTTF: 2 * time.Second,
			wantErr: openaiapi.TypeUpstream,
		},
		{
			name: "client left after the provider counted the prompt: its prompt count is kept", model: "claude",
			chunks: []string{anStart, anDelta}, cause: filters.ErrClientGone,
			want: filters.Usage{Known: true, PromptTokens: 500, CachedTokens: 100, CompletionTokens: openaiapi.TextTokens("A fairly long sentence of about forty bytes."), Estimated: true,
				CostMicros: Cost(&policy.Model{Price: policy.Price{InputPerMTok: 3_000_000, OutputPerMTok: 15_000_000, CachedInputPerMTok: 300_000}},
					filters.Usage{PromptTokens: 500, CachedTokens: 100, CompletionTokens: openaiapi.TextTokens("A fairly long sentence of about forty bytes.")})},
			wantTTF: 2 * time.Second,
		},
		{
			// 400×3 + 100×0.3 + 200×3.75 + 10×15 micro-USD.
			name: "cache writes without their lifetime: at the 5-minute rate", model: "claude",
			chunks: []string{anWrote, anDelta, anEnd}, eos: true,
			want:    filters.Usage{Known: true, PromptTokens: 700, CachedTokens: 100, CacheWriteTokens: 200, CompletionTokens: 10, CostMicros: 2130},
			wantTTF: 2 * time.Second,
		},
		{
			// 400×3 + 100×0.3 + 200×6 + 10×15 micro-USD.
			name: "cache writes without their lifetime, an hour asked: at the hour's rate", model: "claude", hour: true,
			chunks: []string{anWrote, anDelta, anEnd}, eos: true,
			want:    filters.Usage{Known: true, PromptTokens: 700, CachedTokens: 100, CacheWrite1hTokens: 200, CompletionTokens: 10, CostMicros: 2580},
			wantTTF: 2 * time.Second,
		},
		{
			// 400×3 + 100×0.3 + 50×3.75 + 150×6 + 10×15 = 2467.5 micro-USD.
			name: "cache writes by lifetime: each at its rate", model: "claude",
			chunks: []string{anWroteByLifetime, anDelta, anEnd}, eos: true,
			want: filters.Usage{Known: true, PromptTokens: 700, CachedTokens: 100, CacheWriteTokens: 50, CacheWrite1hTokens: 150, CompletionTokens: 10,
				CostMicros: 2468},
			wantTTF: 2 * time.Second,
		},
		{
			name: "the response cache answered for the failed attempt: its usage stands", model: "gpt",
			chunks: []string{oaRole}, eos: true, cached: &filters.Usage{Known: true, PromptTokens: 7, CompletionTokens: 3},
			want:    filters.Usage{Known: true, PromptTokens: 7, CompletionTokens: 3},
			wantErr: openaiapi.TypeUpstream,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			f := &Filter{now: func() time.Time { return now }}
			ctx := context.Background()
			asked := *chat
			asked.CachesForAnHour = tt.hour
			x := &filters.Exchange{ID: "req-1", Started: t0, Policy: p, Route: p.Routes[0], Chat: &asked, Body: []byte(body),
				Plan: []filters.Target{{Model: p.Model(tt.model)}}}
			a, _ := x.NewAttempt(1, t0)
			if err := f.Attempt(ctx, x, a); err != nil {
				t.Fatal(err)
			}
			x.Response.Status = 200
			x.Response.Header = filters.Headers{{Key: ":status", Value: "200"}, {Key: "content-type", Value: "text/event-stream"}}
			if err := f.ResponseHeaders(ctx, x); err != nil || !x.Response.Streaming {
				t.Fatalf("streaming %v, err %v", x.Response.Streaming, err)
			}
			for i, c := range tt.chunks {
				now = t0.Add(time.Duration(i+1) * time.Second)
				ch := &filters.Chunk{Data: []byte(c), EOS: tt.eos && i == len(tt.chunks)-1}
				if err := f.ResponseChunk(ctx, x, ch); err != nil {
					t.Fatal(err)
				}
			}
			if tt.cached != nil {
				x.Cached, x.Usage = filters.Cached{How: "stale", Model: "gpt"}, *tt.cached
			}
			f.Done(ctx, x, tt.cause)
			if diff := cmp.Diff(tt.want, x.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			var ttf time.Duration
			if !x.Sent.FirstToken.IsZero() {
				ttf = x.Sent.FirstToken.Sub(t0)
			}
			if ttf != tt.wantTTF {
				t.Errorf("time to first token %v, want %v", ttf, tt.wantTTF)
			}
			if x.Sent.ErrorType != tt.wantErr {
				t.Errorf("stream error %q, want %q", x.Sent.ErrorType, tt.wantErr)
			}
		})
	}
}

// TestAccountingBuffered: a whole answer is priced when its body is
// translated, before Done, so the last response message can report it, and
// its first token is the whole body.
func TestAccountingBuffered(t *testing.T) {
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(accountPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`)
	chat, _ := openaiapi.ParseChatRequest(body)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := &Filter{now: func() time.Time { return t0.Add(time.Second) }}
	ctx := context.Background()
	x := &filters.Exchange{ID: "req-2", Started: t0, Policy: p, Route: p.Routes[0], Chat: chat, Body: body, Plan: []filters.Target{{Model: p.Model("gpt")}}}
	a, _ := x.NewAttempt(1, t0)
	if err := f.Attempt(ctx, x, a); err != nil {
		t.Fatal(err)
	}
	x.Response.Status = 200
	x.Response.Header = filters.Headers{{Key: "content-type", Value: "application/json"}}
	if err := f.ResponseHeaders(ctx, x); err != nil {
		t.Fatal(err)
	}
	resp := `{"id":"c","object":"chat.completion","created":1,"model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":0}}}`
	if err := f.ResponseChunk(ctx, x, &filters.Chunk{Data: []byte(resp), EOS: true}); err != nil {
		t.Fatal(err)
	}
	want := filters.Usage{Known: true, PromptTokens: 9, CompletionTokens: 2, CostMicros: 43}
	if diff := cmp.Diff(want, x.Usage); diff != "" {
		t.Errorf("usage before Done (-want +got):\n%s", diff)
	}
	if got := x.Sent.FirstToken.Sub(t0); got != time.Second || !x.Sent.Complete {
		t.Errorf("first token after %v, complete %v; want 1s, true", got, x.Sent.Complete)
	}
}

func TestRecordIgnoresWhatIsNotGenerated(t *testing.T) {
	var s filters.Sent
	now := time.Unix(1, 0)
	record(&s, nil, []byte(strings.Join([]string{
		": keep-alive",
		`data: {"choices":[{"delta":{"role":"assistant","content":""}}]}`,
		"data: [DONE]",
		"data: {not json",
		`data: {"choices":[{"delta":{"tool_calls":[{"function":{"name":"get","arguments":"{\"a\":1}"}}]}}]}`,
		`data: {"error":{"message":"x"}}`,
	}, "\n\n")), func() time.Time { return now })
	if got, want := string(s.Text), `get{"a":1}`; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if !s.FirstToken.Equal(now) || s.ErrorType != "stream_error" {
		t.Errorf("first token %v, error %q; want %v, stream_error", s.FirstToken, s.ErrorType, now)
	}
}

// TestRecordReadsEveryAPIsEvents: the generated text of a Messages and a
// Responses stream counts as a chat stream's does, and their error events
// mark the stream failed.
func TestRecordReadsEveryAPIsEvents(t *testing.T) {
	tests := []struct {
		name      string
		events    []string
		wantText  string
		wantError string
	}{
		{name: "messages", events: []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"m","content":[]}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}`,
			`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
		}, wantText: `Hi{"a"`},
		{name: "responses", events: []string{
			`event: response.created` + "\n" + `data: {"type":"response.created","sequence_number":0,"response":{"output":[]}}`,
			`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","sequence_number":1,"delta":"Hi"}`,
			`event: response.refusal.delta` + "\n" + `data: {"type":"response.refusal.delta","sequence_number":2,"delta":" no"}`,
			`event: response.function_call_arguments.delta` + "\n" + `data: {"type":"response.function_call_arguments.delta","sequence_number":3,"delta":"{}"}`,
			`event: response.output_text.done` + "\n" + `data: {"type":"response.output_text.done","sequence_number":4,"text":"Hi"}`,
			`event: error` + "\n" + `data: {"type":"error","sequence_number":5,"message":"m","error":{"message":"m","type":"upstream_error"}}`,
		}, wantText: `Hi no{}`, wantError: "upstream_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s filters.Sent
			record(&s, nil, []byte(strings.Join(tt.events, "\n\n")+"\n\n"), time.Now)
			if string(s.Text) != tt.wantText || s.ErrorType != tt.wantError || s.FirstToken.IsZero() {
				t.Errorf("text %q error %q first token %v; want %q, %q and a first token", s.Text, s.ErrorType, s.FirstToken, tt.wantText, tt.wantError)
			}
		})
	}
}

// BenchmarkRecord: what reading one streamed chat chunk costs, the usual
// case of every event a client is sent.
func BenchmarkRecord(b *testing.B) {
	chunk := []byte(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-mini","system_fingerprint":"fp_06737a9306","choices":[{"index":0,"delta":{"content":" something"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	now := time.Now
	b.ReportAllocs()
	for b.Loop() {
		var s filters.Sent
		record(&s, nil, chunk, now)
	}
}
