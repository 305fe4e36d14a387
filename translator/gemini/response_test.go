package gemini

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

func TestFinishReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason   string
		hasCalls bool
		want     string
	}{
		{"STOP", false, "stop"},
		{"STOP", true, "tool_calls"},
		{"", false, "stop"},
		{"MAX_TOKENS", false, "length"},
		{"MAX_TOKENS", true, "length"},
		{"SAFETY", false, "content_filter"},
		{"RECITATION", false, "content_filter"},
		{"LANGUAGE", false, "content_filter"},
		{"OTHER", false, "content_filter"},
		{"BLOCKLIST", false, "content_filter"},
		{"PROHIBITED_CONTENT", false, "content_filter"},
		{"SPII", false, "content_filter"},
		{"IMAGE_SAFETY", false, "content_filter"},
		{"IMAGE_PROHIBITED_CONTENT", false, "content_filter"},
		{"IMAGE_RECITATION", false, "content_filter"},
		{"IMAGE_OTHER", false, "content_filter"},
		{"NO_IMAGE", false, "content_filter"},
		{"MALFORMED_FUNCTION_CALL", false, "stop"},
		{"UNEXPECTED_TOOL_CALL", false, "stop"},
		{"TOO_MANY_TOOL_CALLS", true, "tool_calls"},
		{"MISSING_THOUGHT_SIGNATURE", false, "stop"},
		{"MALFORMED_RESPONSE", false, "stop"},
		{"FINISH_REASON_UNSPECIFIED", false, "stop"},
		{"A_REASON_FROM_THE_FUTURE", false, "stop"},
	}
	for _, tt := range tests {
		name := tt.reason
		if tt.hasCalls {
			name += " with calls"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := finishReason(tt.reason, tt.hasCalls); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		delay string
		want  string
	}{
		{"whole seconds", "17s", "17"},
		{"fraction rounds up", "0.250s", "1"},
		{"zero", "0s", "0"},
		{"not a duration", "soon", ""},
		{"negative", "-3s", ""},
		{"absent", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := &apiError{Details: []errorDetail{{Type: "type.googleapis.com/google.rpc.RetryInfo", RetryDelay: tt.delay}}}
			if got := e.retryAfter(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStreamUsageWhenCut: a stream that breaks still reports the last
// running totals, so the gateway can account for it.
func TestStreamUsageWhenCut(t *testing.T) {
	t.Parallel()
	tr := New(testTarget())
	in := `data: {"candidates":[{"content":{"parts":[{"text":"Hel"}]}}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":1}}` + "\n\n" +
		`data: {"candidates":[{"content":{"parts":[{"text":"lo"}]}}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"thoughtsTokenCount":5}}` + "\n\n" +
		`data: {"candidates":[{"content":{"parts":[{"te`
	out := tr.StreamChunk([]byte(in), true)
	if !strings.Contains(string(out), `"error"`) || strings.Contains(string(out), "[DONE]") {
		t.Errorf("got %q, want an error event and no [DONE]", out)
	}
	got, ok := tr.Usage()
	want := openaiapi.Usage{
		PromptTokens: 10, CompletionTokens: 7, TotalTokens: 17,
		PromptTokensDetails:     &openaiapi.PromptTokensDetails{},
		CompletionTokensDetails: &openaiapi.CompletionTokensDetails{ReasoningTokens: 5},
	}
	if !ok {
		t.Fatal("got no usage, want the last running totals")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

// TestStreamNothingAfterEnd: bytes after the stream was closed are not
// translated into a second ending.
func TestStreamNothingAfterEnd(t *testing.T) {
	t.Parallel()
	tr := New(testTarget())
	tr.StreamChunk([]byte(`data: {"candidates":[{"content":{"parts":[{"text":"Hi"}]},"finishReason":"STOP"}]}`+"\n\n"), true)
	if got := tr.StreamChunk([]byte("data: {}\n\n"), true); len(got) != 0 {
		t.Errorf("got %q after the end, want nothing", got)
	}
}

func TestCompleteUsageUnknownWithoutMetadata(t *testing.T) {
	t.Parallel()
	tr := New(testTarget())
	r := tr.Complete(http.StatusOK, nil, []byte(`{"candidates":[{"content":{"parts":[{"text":"Hi"}]},"finishReason":"STOP"}]}`))
	if r.Status != http.StatusOK {
		t.Fatalf("got status %d, want 200", r.Status)
	}
	if _, ok := tr.Usage(); ok {
		t.Error("got usage, want none: Gemini reported none")
	}
	if strings.Contains(string(r.Body), `"usage"`) {
		t.Errorf("got a usage field in %s, want none", r.Body)
	}
}

func TestEmbeddingsBase64IsLittleEndianFloat32(t *testing.T) {
	t.Parallel()
	values := []float64{-0.9578979, 0.30199993, 1, 0, -2.5e-7}
	b, err := base64.StdEncoding.DecodeString(float32Base64(values))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4*len(values) {
		t.Fatalf("got %d bytes, want %d", len(b), 4*len(values))
	}
	for i, v := range values {
		got := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if got != float32(v) {
			t.Errorf("value %d: got %v, want %v", i, got, float32(v))
		}
	}
}

func TestEmbeddingsRefusals(t *testing.T) {
	t.Parallel()
	many := make([]string, maxBatchEmbed+1)
	for i := range many {
		many[i] = "x"
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name string
		body string
	}{
		{"one token array", `{"model":"e","input":[1,2,3]}`},
		{"token arrays", `{"model":"e","input":[[1,2],[3]]}`},
		{"more inputs than a batch takes", `{"model":"e","input":` + string(manyJSON) + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, pe := openaiapi.ParseEmbeddingsRequest([]byte(tt.body))
			if pe != nil {
				t.Fatalf("the test body is not a valid embeddings request: %v", pe)
			}
			_, e := New(testTarget()).EmbeddingsRequest(req, []byte(tt.body))
			if e == nil || e.Status != http.StatusBadRequest || e.Param != "input" {
				t.Errorf("got %v, want a 400 naming input", e)
			}
		})
	}
}

func TestEmbeddingsUsageIsEstimated(t *testing.T) {
	t.Parallel()
	body := `{"model":"e","input":["abcd","abcde","日本語"]}`
	req, pe := openaiapi.ParseEmbeddingsRequest([]byte(body))
	if pe != nil {
		t.Fatal(pe)
	}
	tr := New(testTarget())
	if _, e := tr.EmbeddingsRequest(req, []byte(body)); e != nil {
		t.Fatal(e)
	}
	if _, ok := tr.Usage(); ok {
		t.Error("got usage before the answer, want none")
	}
	r := tr.EmbeddingsComplete(http.StatusOK, nil, []byte(`{"embeddings":[{"values":[1]},{"values":[2]},{"values":[3]}]}`))
	if r.Status != http.StatusOK {
		t.Fatalf("got status %d (%s), want 200", r.Status, r.Body)
	}
	// ceil(4/4) + ceil(5/4) + ceil(3 characters/4) = 1 + 2 + 1
	want := openaiapi.Usage{PromptTokens: 4, TotalTokens: 4}
	got, ok := tr.Usage()
	if !ok || !cmp.Equal(got, want) {
		t.Errorf("got usage %+v (%v), want %+v", got, ok, want)
	}
}
