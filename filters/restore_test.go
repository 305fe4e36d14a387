package filters

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/redact"
)

// restoring is a Redaction that masked ana@example.com as [email_1] and
// +351 912 345 678 as [phone_1], and restores them.
func restoring(t *testing.T) *Redaction {
	t.Helper()
	m := redact.NewMasker(redact.AllKinds)
	if got := m.Mask("ana@example.com +351 912 345 678"); got != "[email_1] [phone_1]" {
		t.Fatalf("masked %q", got)
	}
	return &Redaction{Masker: m, Restore: true}
}

func TestRestoreAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"chat: content and tool-call arguments",
			`{"choices":[{"message":{"role":"assistant","content":"Wrote to [email_1].","tool_calls":[{"function":{"name":"call","arguments":"{\"n\":\"[phone_1]\"}"}}]}}]}`,
			`{"choices":[{"message":{"role":"assistant","content":"Wrote to ana@example.com.","tool_calls":[{"function":{"name":"call","arguments":"{\"n\":\"+351 912 345 678\"}"}}]}}]}`},
		{"Messages: text and tool input, not thinking",
			`{"content":[{"type":"thinking","thinking":"[email_1] is masked","signature":"s"},{"type":"text","text":"to [email_1]"},{"type":"tool_use","input":{"to":"[email_1]"}}]}`,
			`{"content":[{"type":"thinking","thinking":"[email_1] is masked","signature":"s"},{"type":"text","text":"to ana@example.com"},{"type":"tool_use","input":{"to":"ana@example.com"}}]}`},
		{"Responses: output text, not reasoning",
			`{"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"[email_1] masked"}],"encrypted_content":"[email_1]"},{"type":"message","content":[{"type":"output_text","text":"to [email_1]"}]}]}`,
			`{"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"[email_1] masked"}],"encrypted_content":"[email_1]"},{"type":"message","content":[{"type":"output_text","text":"to ana@example.com"}]}]}`},
		{"placeholders it did not make stay", `{"content":"[email_2] and [note]"}`, `{"content":"[email_2] and [note]"}`},
		{"not JSON: as it is", `[email_1`, `[email_1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := string(restoring(t).RestoreAnswer([]byte(tt.in))); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// sse joins events into a stream.
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString(e + "\n\n")
	}
	return b.String()
}

func chatChunk(content string) string {
	b, _ := json.Marshal(content)
	return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`
}

func messagesDelta(kind, text string) string {
	field := map[string]string{"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}[kind]
	b, _ := json.Marshal(text)
	return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"" + kind + "\",\"" + field + "\":" + string(b) + "}}"
}

func responsesDelta(seq int, text string) string {
	b, _ := json.Marshal(text)
	return "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":" + string(b) + ",\"sequence_number\":" + string(rune('0'+seq)) + "}"
}

// TestRestoreStream: placeholders come back in every protocol's deltas,
// whole or split across deltas, at whatever byte the stream is cut; the
// events stay the same events, numbered as they were; thinking is left
// as it was; text that only looks like the start of a placeholder is
// sent as it is.
func TestRestoreStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		want   string // the text of the deltas, joined
		events int
	}{
		{"chat: whole and split", sse(chatChunk("To [email_1]"), chatChunk(" or [ph"), chatChunk("one_1] now"), "data: [DONE]"),
			"To ana@example.com or +351 912 345 678 now", 4},
		{"chat: split over three deltas", sse(chatChunk("x ["), chatChunk("email"), chatChunk("_1] y")), "x ana@example.com y", 3},
		{"chat: a bracket that begins no placeholder", sse(chatChunk("see [note"), chatChunk("] here"), chatChunk(" [email_")), "see [note] here [email_", 3},
		{"Messages: text restored, thinking not", sse(messagesDelta("thinking_delta", "[email_1] masked"), messagesDelta("text_delta", "to [email"),
			messagesDelta("text_delta", "_1]"), messagesDelta("input_json_delta", `{"to":"[email_1]"}`), "event: message_stop\ndata: {\"type\":\"message_stop\"}"),
			`[email_1] maskedto ana@example.com{"to":"ana@example.com"}`, 5},
		{"Messages: a held start the block's end lets go", sse(messagesDelta("text_delta", "ends [em"), "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}"),
			"ends [em", 2},
		{"Responses: numbers kept", sse(responsesDelta(1, "to [email_"), responsesDelta(2, "1], done")), "to ana@example.com, done", 2},
		{"Responses: reasoning summaries not restored", sse(`event: response.reasoning_summary_text.delta`+"\n"+`data: {"type":"response.reasoning_summary_text.delta","delta":"[email_1] ","sequence_number":1}`,
			responsesDelta(2, "to [email_1]")), "[email_1] to ana@example.com", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var whole string
			for cut := 0; cut <= len(tt.in); cut++ {
				r := restoring(t)
				got := string(r.RestoreStream([]byte(tt.in[:cut]), false)) + string(r.RestoreStream([]byte(tt.in[cut:]), true))
				if cut == 0 {
					whole = got
					text, events, seqs := deltas(t, got)
					if text != tt.want || events != tt.events {
						t.Fatalf("text %q in %d events, want %q in %d\n%s", text, events, tt.want, tt.events, got)
					}
					for i, n := range seqs {
						if n != i+1 {
							t.Errorf("sequence numbers %v, want 1, 2, …", seqs)
						}
					}
				} else if got != whole {
					t.Fatalf("cut at byte %d:\n%s\nwant\n%s", cut, got, whole)
				}
			}
		})
	}
}

// deltas reads a stream's delta text (every protocol's), its events and
// its sequence numbers.
func deltas(t *testing.T, s string) (text string, events int, seqs []int) {
	t.Helper()
	for _, ev := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n") {
		events++
		_, data, _ := strings.Cut(ev, "data: ")
		if data == "[DONE]" {
			continue
		}
		var e struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Delta          json.RawMessage `json:"delta"`
			SequenceNumber *int            `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		for _, c := range e.Choices {
			text += c.Delta.Content
		}
		var str string
		var fields map[string]string
		switch {
		case json.Unmarshal(e.Delta, &str) == nil: // Responses
			text += str
		case json.Unmarshal(e.Delta, &fields) == nil: // Messages
			text += fields["thinking"] + fields["text"] + fields["partial_json"]
		}
		if e.SequenceNumber != nil {
			seqs = append(seqs, *e.SequenceNumber)
		}
	}
	return text, events, seqs
}
