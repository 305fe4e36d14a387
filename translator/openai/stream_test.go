package openai

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// TestStreamUsage checks the usage the gateway accounts for a stream,
// including streams that were cut before their end.
func TestStreamUsage(t *testing.T) {
	t.Parallel()
	usage := func(p, c, cached int) *openaiapi.Usage {
		u := &openaiapi.Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
		if cached > 0 {
			u.PromptTokensDetails = &openaiapi.PromptTokensDetails{CachedTokens: cached}
		}
		return u
	}
	tests := []struct {
		name string
		want *openaiapi.Usage // nil: no usage reported
	}{
		{"openai_usage_not_asked", usage(4, 4, 0)},
		{"azure_usage_asked", usage(4, 4, 0)},
		{"mistral_usage_on_finish_not_asked", usage(9, 4, 0)},
		{"groq_x_groq_usage_asked", usage(12, 3, 0)},
		{"deepseek_keepalive_reasoning", usage(64, 120, 48)},
		{"cut_after_finish_no_done", usage(3, 1, 0)},
		{"cut_mid_stream", nil},
		{"error_event_mid_stream", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc, in := readStream(t, filepath.Join("testdata", "stream", tt.name+".in.sse"))
			_, tr := runStream(t, sc, in)
			u, ok := tr.Usage()
			if tt.want == nil {
				if ok {
					t.Fatalf("got usage %+v, want none", u)
				}
				return
			}
			if !ok {
				t.Fatalf("got no usage, want %+v", tt.want)
			}
			got := openaiapi.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
			if u.Cached() > 0 {
				got.PromptTokensDetails = &openaiapi.PromptTokensDetails{CachedTokens: u.Cached()}
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamEndsOnce: after [DONE] or an error event nothing more is
// written, however the rest of the stream arrives.
func TestStreamEndsOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"done then eos", "data: [DONE]\n\n", "data: [DONE]\n\n"},
		{"done without blank line", "data: [DONE]", "data: [DONE]\n\n"},
		{"empty stream", "", ""},
		{"only comments", ": keep-alive\n\n: keep-alive\n\n", ""},
		{"only azure filter chunk", `data: {"id":"","object":"","created":0,"model":"","choices":[],"prompt_filter_results":[]}` + "\n\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := New(target(caseTarget{}))
			got := tr.StreamChunk([]byte(tt.input), false)
			got = append(got, tr.StreamChunk(nil, true)...)
			if tt.want == "" {
				// A stream that never finished must end in an error event.
				if !bytes.HasPrefix(got, []byte(`data: {"error":`)) || bytes.Count(got, []byte("data:")) != 1 {
					t.Fatalf("got %q, want one error event", got)
				}
				return
			}
			if string(got) != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if more := tr.StreamChunk([]byte("data: {\"choices\":[{}]}\n\n"), true); len(more) != 0 {
				t.Fatalf("got %q after the end, want nothing", more)
			}
		})
	}
}
