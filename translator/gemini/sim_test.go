package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/sse"
	"github.com/switchyard/switchyard/translator/translatortest"
)

// The round trips below send translated requests to the Gemini simulator,
// which validates them as the API does, and translate its real answers.

const simKey = "sim-gemini-key"

func startSim(t *testing.T) *providersim.Sim {
	t.Helper()
	sim, err := providersim.Start(context.Background(), providersim.Config{Providers: []providersim.ProviderConfig{{
		Name: "gemini", Kind: providersim.KindGemini, ExpectKey: simKey,
		Models: []string{"gemini-2.5-flash", "gemini-embedding-001"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return sim
}

func simTarget(key string) translator.Target {
	t := testTarget()
	t.Key = key
	return t
}

// post sends a translated request and returns the raw answer.
func post(t *testing.T, sim *providersim.Sim, up translator.Upstream) (int, translator.Headers, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sim.URL("gemini")+up.Path, bytes.NewReader(up.Body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range up.Header {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) { // a cut stream is an answer too
		t.Fatal(err)
	}
	var h translator.Headers
	for k, vs := range resp.Header {
		h = append(h, translator.Header{Key: strings.ToLower(k), Value: vs[0]})
	}
	return resp.StatusCode, h, body
}

// chat translates a client body, sends it and translates the whole answer.
func chat(t *testing.T, sim *providersim.Sim, key, body string) (translator.Result, *Translator) {
	t.Helper()
	req, e := openaiapi.ParseChatRequest([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	tr := New(simTarget(key))
	up, e := tr.Request(req, []byte(body))
	if e != nil {
		t.Fatal(e)
	}
	status, h, raw := post(t, sim, up)
	return tr.Complete(status, h, raw), tr
}

func completion(t *testing.T, r translator.Result) openaiapi.ChatCompletion {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("got status %d: %s, want 200", r.Status, r.Body)
	}
	var cc openaiapi.ChatCompletion
	if err := json.Unmarshal(r.Body, &cc); err != nil || len(cc.Choices) != 1 {
		t.Fatalf("not a chat completion: %s", r.Body)
	}
	return cc
}

func TestSimToolRoundTrip(t *testing.T) {
	sim := startSim(t)
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}]`
	first := completion(t, mustChat(t, sim, `{"model":"my-flash","messages":[{"role":"user","content":"Weather in Oslo?"}],`+tools+`}`))
	call := first.Choices[0]
	if call.FinishReason != "tool_calls" || len(call.Message.ToolCalls) != 1 {
		t.Fatalf("got finish %q with %d calls, want tool_calls with one", call.FinishReason, len(call.Message.ToolCalls))
	}
	tc := call.Message.ToolCalls[0]
	history, _ := json.Marshal([]any{
		map[string]any{"role": "user", "content": "Weather in Oslo?"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{tc}},
		map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": "4 degrees and raining"},
	})
	second := completion(t, mustChat(t, sim, `{"model":"my-flash","messages":`+string(history)+`,`+tools+`}`))
	if got := *second.Choices[0].Message.Content; got != "Tool result received: 4 degrees and raining" {
		t.Errorf("got %q, want the simulator to have read the tool result", got)
	}
	if second.Choices[0].FinishReason != "stop" || second.Usage == nil || second.Usage.PromptTokens == 0 {
		t.Errorf("got finish %q usage %+v, want stop with usage", second.Choices[0].FinishReason, second.Usage)
	}
}

// TestSimAcceptsRequestGoldens sends every translated chat request golden
// to the simulator, which refuses what the Gemini API refuses (function
// declarations' schemas included): each must be answered.
func TestSimAcceptsRequestGoldens(t *testing.T) {
	sim := startSim(t)
	for _, c := range translatortest.Cases(t, "request", "json") {
		if isEmbedding(c.Name) {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			tr := New(simTarget(simKey))
			up, e := translatortest.SendChat(t, tr, c.Input(t))
			if e != nil {
				return // a refusal golden: nothing reaches the provider
			}
			status, h, raw := post(t, sim, up)
			if status != http.StatusOK {
				t.Fatalf("the simulator answered %d: %s", status, raw)
			}
			if r := tr.Complete(status, h, raw); r.Status != http.StatusOK && !tr.IsStream(status, h) {
				t.Errorf("translated answer: %d %s", r.Status, r.Body)
			}
		})
	}
}

func mustChat(t *testing.T, sim *providersim.Sim, body string) translator.Result {
	t.Helper()
	r, _ := chat(t, sim, simKey, body)
	return r
}

func TestSimImage(t *testing.T) {
	sim := startSim(t)
	cc := completion(t, mustChat(t, sim, `{"model":"my-flash","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"image_url","image_url":{"url":"https://img.example.net/a.jpg"}}]}]}`))
	if got := *cc.Choices[0].Message.Content; !strings.HasSuffix(got, "[2 images]") {
		t.Errorf("got %q, want the simulator to have seen two images", got)
	}
}

// TestSimStream feeds the streamed answer in 7-byte pieces.
func TestSimStream(t *testing.T) {
	sim := startSim(t)
	body := `{"model":"my-flash","messages":[{"role":"user","content":"What is the capital of Portugal?"}],"stream":true,"stream_options":{"include_usage":true}}`
	req, _ := openaiapi.ParseChatRequest([]byte(body))
	tr := New(simTarget(simKey))
	up, e := tr.Request(req, []byte(body))
	if e != nil {
		t.Fatal(e)
	}
	status, h, raw := post(t, sim, up)
	if !tr.IsStream(status, h) {
		t.Fatalf("got status %d content-type %q, want a stream", status, h.Get("content-type"))
	}
	var out []byte
	for len(raw) > 7 {
		out = append(out, tr.StreamChunk(raw[:7], false)...)
		raw = raw[7:]
	}
	out = append(out, tr.StreamChunk(raw, true)...)

	var r sse.Reader
	r.Feed(out)
	var text strings.Builder
	var finish string
	var usage *openaiapi.Usage
	var last string
	for {
		ev, ok := r.Next()
		if !ok {
			break
		}
		last = string(ev.Data)
		if last == "[DONE]" {
			continue
		}
		var c openaiapi.ChatCompletionChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatalf("event %s: %v", ev.Data, err)
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text.WriteString(*ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if got, want := text.String(), "Hello from gemini-2.5-flash: What is the capital of Portugal?"; got != want {
		t.Errorf("got text %q, want %q", got, want)
	}
	if finish != "stop" || last != "[DONE]" || usage == nil || usage.CompletionTokens == 0 {
		t.Errorf("got finish %q, last event %q, usage %+v; want stop, [DONE] and usage", finish, last, usage)
	}
}

func TestSimErrors(t *testing.T) {
	sim := startSim(t)
	t.Run("wrong key", func(t *testing.T) {
		r, _ := chat(t, sim, "wrong-key", `{"model":"my-flash","messages":[{"role":"user","content":"Hi"}]}`)
		if r.Status != http.StatusBadGateway || !strings.Contains(string(r.Body), "upstream_auth_error") || strings.Contains(string(r.Body), "wrong-key") {
			t.Errorf("got %d %s, want 502 upstream_auth_error without the key", r.Status, r.Body)
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		if err := sim.SetFault("gemini", providersim.Fault{Mode: providersim.FaultStatus, Status: 429, RetryAfter: providersim.Duration(3 * time.Second), Count: 1}); err != nil {
			t.Fatal(err)
		}
		r, _ := chat(t, sim, simKey, `{"model":"my-flash","messages":[{"role":"user","content":"Hi"}]}`)
		got := translator.Headers(r.Header).Get("retry-after")
		if r.Status != http.StatusTooManyRequests || got != "3" {
			t.Errorf("got %d retry-after %q, want 429 retry-after 3", r.Status, got)
		}
	})
	t.Run("stream cut", func(t *testing.T) {
		if err := sim.SetFault("gemini", providersim.Fault{Mode: providersim.FaultCutStream, Chunks: 1, Count: 1}); err != nil {
			t.Fatal(err)
		}
		body := `{"model":"my-flash","messages":[{"role":"user","content":"Say several words please"}],"stream":true}`
		req, _ := openaiapi.ParseChatRequest([]byte(body))
		tr := New(simTarget(simKey))
		up, _ := tr.Request(req, []byte(body))
		_, _, raw := post(t, sim, up)
		out := string(tr.StreamChunk(raw, true))
		if !strings.Contains(out, `data: {"error"`) || strings.Contains(out, "[DONE]") {
			t.Errorf("got %q, want an error event and no [DONE]", out)
		}
	})
}

func TestSimEmbeddings(t *testing.T) {
	sim := startSim(t)
	tests := []struct {
		name string
		body string
		want int
	}{
		{"one input", `{"model":"my-embed","input":"hello there"}`, 1},
		{"batch in base64", `{"model":"my-embed","input":["a","b","c"],"encoding_format":"base64","dimensions":8}`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, e := openaiapi.ParseEmbeddingsRequest([]byte(tt.body))
			if e != nil {
				t.Fatal(e)
			}
			target := simTarget(simKey)
			m := *target.Model
			m.Upstream = "gemini-embedding-001"
			target.Model = &m
			tr := New(target)
			up, e := tr.EmbeddingsRequest(req, []byte(tt.body))
			if e != nil {
				t.Fatal(e)
			}
			status, h, raw := post(t, sim, up)
			r := tr.EmbeddingsComplete(status, h, raw)
			var list openaiapi.EmbeddingList
			if r.Status != http.StatusOK || json.Unmarshal(r.Body, &list) != nil || len(list.Data) != tt.want {
				t.Fatalf("got %d %s, want %d embeddings", r.Status, r.Body, tt.want)
			}
			for i, d := range list.Data {
				if d.Index != i {
					t.Errorf("embedding %d has index %d", i, d.Index)
				}
			}
		})
	}
}
