package anthropic

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

func TestFinishReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		stop      string
		toolCalls bool
		want      string
	}{
		{"end_turn", "end_turn", false, "stop"},
		{"stop_sequence", "stop_sequence", false, "stop"},
		{"max_tokens", "max_tokens", false, "length"},
		{"max_tokens during a tool call", "max_tokens", true, "length"},
		{"tool_use", "tool_use", true, "tool_calls"},
		{"tool_use answered by the JSON tool", "tool_use", false, "stop"},
		{"refusal", "refusal", false, "content_filter"},
		{"pause_turn", "pause_turn", false, "stop"},
		{"model_context_window_exceeded", "model_context_window_exceeded", false, "length"},
		{"missing", "", false, "stop"},
		{"unknown", "a_future_reason", false, "stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := finishReason(tt.stop, tt.toolCalls); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func ints(input, output, cacheRead, cacheWrite int) openaiapi.Usage {
	return openaiapi.Usage{
		PromptTokens: input + cacheRead + cacheWrite, CompletionTokens: output, TotalTokens: input + cacheRead + cacheWrite + output,
		PromptTokensDetails: &openaiapi.PromptTokensDetails{CachedTokens: cacheRead, CacheWriteTokens: cacheWrite},
	}
}

// lifetimes is u with its cache writes broken down by lifetime.
func lifetimes(u openaiapi.Usage, fiveMin, hour int) openaiapi.Usage {
	d := *u.PromptTokensDetails
	d.CacheWrite5mTokens, d.CacheWrite1hTokens = fiveMin, hour
	u.PromptTokensDetails = &d
	return u
}

const (
	evStart     = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":100,\"cache_read_input_tokens\":50,\"cache_creation_input_tokens\":10,\"output_tokens\":1}}}\n\n"
	evText      = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"
	evDelta     = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":30}}\n\n"
	evDeltaMore = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"input_tokens\":120,\"output_tokens\":42}}\n\n"
	evBare      = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{}}\n\n"
	evStop      = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	evStartTTL  = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":100,\"cache_read_input_tokens\":50,\"cache_creation_input_tokens\":10,\"cache_creation\":{\"ephemeral_5m_input_tokens\":4,\"ephemeral_1h_input_tokens\":6},\"output_tokens\":1}}}\n\n"
	evDeltaTTL  = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"cache_creation_input_tokens\":12,\"cache_creation\":{\"ephemeral_1h_input_tokens\":8},\"output_tokens\":42}}\n\n"
	evError     = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
)

// TestStreamUsage checks that usage is set, not added, from cumulative
// reports, survives reports without usage, and is there when the stream
// is cut or fails.
func TestStreamUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		stream   string
		eos      bool
		want     openaiapi.Usage
		wantSeen bool
	}{
		{"nothing yet", "", false, ints(0, 0, 0, 0), false},
		{"message_start only", evStart, false, ints(100, 1, 50, 10), true},
		{"message_delta sets output", evStart + evText + evDelta, false, ints(100, 30, 50, 10), true},
		{"later deltas set, not add", evStart + evDelta + evDeltaMore, false, ints(120, 42, 50, 10), true},
		{"a delta without usage changes nothing", evStart + evDelta + evBare + evStop, true, ints(100, 30, 50, 10), true},
		{"cut stream keeps what was reported", evStart + evText + evDelta[:20], true, ints(100, 1, 50, 10), true},
		{"error event keeps what was reported", evStart + evDelta + evError, true, ints(100, 30, 50, 10), true},
		{"writes by lifetime", evStartTTL + evDelta + evStop, true, lifetimes(ints(100, 30, 50, 10), 4, 6), true},
		{"later lifetimes set, not add, each on its own", evStartTTL + evDeltaTTL + evStop, true, lifetimes(ints(100, 42, 50, 12), 4, 8), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := newWith(t, []byte(defaultStreamRequest))
			tr.StreamChunk([]byte(tt.stream), tt.eos)
			got, seen := tr.Usage()
			if seen != tt.wantSeen {
				t.Errorf("seen: got %v, want %v", seen, tt.wantSeen)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompleteUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		status   int
		body     string
		want     openaiapi.Usage
		wantSeen bool
	}{
		{"message", 200, `{"type":"message","content":[],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":5,"cache_creation_input_tokens":2}}`, ints(7, 3, 5, 2), true},
		{"writes by lifetime", 200, `{"type":"message","content":[],"stop_reason":"end_turn","usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":5,"cache_creation_input_tokens":30,"cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":20}}}`,
			lifetimes(ints(7, 3, 5, 30), 10, 20), true},
		{"a breakdown above the total: the breakdown's sum is written", 200, `{"type":"message","content":[],"usage":{"input_tokens":7,"output_tokens":3,"cache_creation_input_tokens":5,"cache_creation":{"ephemeral_5m_input_tokens":4,"ephemeral_1h_input_tokens":6}}}`,
			lifetimes(ints(7, 3, 0, 10), 4, 6), true},
		{"a null breakdown", 200, `{"type":"message","content":[],"usage":{"input_tokens":7,"output_tokens":3,"cache_creation_input_tokens":5,"cache_creation":null}}`, ints(7, 3, 0, 5), true},
		{"error", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, ints(0, 0, 0, 0), false},
		{"garbage", 200, `<html>`, ints(0, 0, 0, 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := newWith(t, []byte(defaultRequest))
			tr.Complete(tt.status, nil, []byte(tt.body))
			got, seen := tr.Usage()
			if seen != tt.wantSeen {
				t.Errorf("seen: got %v, want %v", seen, tt.wantSeen)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		ct     string
		want   bool
	}{
		{"event stream", 200, "text/event-stream", true},
		{"event stream with charset", 200, "Text/Event-Stream; charset=utf-8", true},
		{"JSON", 200, "application/json", false},
		{"error status", 529, "text/event-stream", false},
		{"no content type", 200, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := New(testTarget()).IsStream(tt.status, translator.Headers{{Key: "content-type", Value: tt.ct}}); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStreamAfterEnd checks that nothing follows the end of a stream:
// neither a second [DONE] nor an error event for bytes after message_stop.
func TestStreamAfterEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		first string
		more  string
	}{
		{"events after message_stop", evStart + evStop, evText + evError},
		{"events after an error", evStart + evError, evText + evStop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := newWith(t, []byte(defaultStreamRequest))
			tr.StreamChunk([]byte(tt.first), false)
			if got := tr.StreamChunk([]byte(tt.more), true); len(got) != 0 {
				t.Errorf("got %q after the end, want nothing", got)
			}
		})
	}
}
