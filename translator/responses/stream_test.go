package responses

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
)

// TestErrorEventNumberedNext: the error event the gateway appends to a
// stream it breaks off (a filter failing after the headers went) carries
// the stream's next sequence number and ends it; once the response is
// complete nothing more is appended.
func TestErrorEventNumberedNext(t *testing.T) {
	in := "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n"
	tr := fresh(t, policy.KindOpenAI, []byte(defaultStreamRequest))
	out := tr.StreamChunk([]byte(in), false)
	n := bytes.Count(out, []byte("\nevent: ")) + 1
	e := openaiapi.Errorf(http.StatusTooManyRequests, openaiapi.TypeRateLimit, "rate_limit_exceeded", "budget spent")
	ev := tr.ErrorEvent(e)
	var got struct {
		Type           string `json:"type"`
		SequenceNumber int    `json:"sequence_number"`
		Code           string `json:"code"`
	}
	_, data, _ := strings.Cut(string(ev), "data: ")
	if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &got); err != nil || got.Type != "error" || got.SequenceNumber != n || got.Code != "rate_limit_exceeded" {
		t.Fatalf("error event %q after %d events; want type error numbered %d", ev, n, n)
	}
	if rest := tr.StreamChunk([]byte("data: [DONE]\n\n"), true); len(rest) != 0 {
		t.Errorf("events after the error: %q", rest)
	}

	done := fresh(t, policy.KindOpenAI, []byte(defaultStreamRequest))
	done.StreamChunk([]byte(in+"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\ndata: [DONE]\n\n"), true)
	if ev := done.ErrorEvent(e); ev != nil {
		t.Errorf("an error event after response.completed: %q", ev)
	}
}
