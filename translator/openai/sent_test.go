package openai

import (
	"testing"

	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
)

// TestSentMatchesReadback: what the translator reports it sent is what
// reading its output back finds, for the text the golden streams lack:
// refusals, escapes, invalid UTF-8, member names spelt otherwise, tool
// calls of a strict provider and an error event.
func TestSentMatchesReadback(t *testing.T) {
	events := []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","refusal":"I can\u2019t"}}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a\"b\n\\c"}},{"index":1,"delta":{"content":"bad ` + "\xff" + ` utf8"}}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"Content":"not this","con\u0074ent":"but this"}}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"get","arguments":{"a":1}}}]}}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"Delta":{"content":"not this either"}},{"index":1,"del\u0074a":{"content":"this","content":"twice","Tool_calls":[{"function":{"name":"not this"}}]}}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"Function":{"name":"not this"}},{"index":1,"function":{"Name":"nor this","arguments":"{\"b\":2}"}}]}}]}`,
		`{"error":{"message":"overloaded","type":"server_error"}}`,
	}
	var in []byte
	for _, ev := range events {
		in = append(in, "data: "+ev+"\n\n"...)
	}
	for i, ct := range fuzzTargets {
		t.Run(ct.Kind+"/"+ct.Dialect, func(t *testing.T) {
			fresh := func() translator.Translator { return fuzzTranslator(t, byte(i)|0x80) }
			translatortest.Reports(t, in, fresh)
			tr := fresh()
			tr.StreamChunk(in, true)
			if text, errorType := tr.(translator.Reporter).Sent(nil); len(text) == 0 || errorType != "upstream_error" {
				t.Errorf("reported %q and error %q, want text and upstream_error (the provider's server_error as the client gets it)", text, errorType)
			}
		})
	}
}
