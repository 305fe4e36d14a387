package anthropic

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
)

// TestSimulatorRoundTrip sends every translated request golden to the
// Anthropic simulator, which enforces the Messages API's rules (required
// max_tokens, strict alternation, a user turn first, tool pairing, tools
// present with tool blocks, no blank text), and translates its answer
// back: each must come out as an OpenAI success.
func TestSimulatorRoundTrip(t *testing.T) {
	t.Parallel()
	sim, err := providersim.Start(t.Context(), providersim.Config{
		Providers: []providersim.ProviderConfig{{Name: "anthropic", Kind: providersim.KindAnthropic, ExpectKey: testTarget().Key}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	for _, c := range translatortest.Cases(t, "request", "json") {
		if strings.HasPrefix(c.Name, "refuse_") {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			tr := New(testTarget())
			up, e := translatortest.SendChat(t, tr, c.Input(t))
			if e != nil {
				t.Fatal(e)
			}
			hreq, err := http.NewRequestWithContext(t.Context(), http.MethodPost, sim.URL("anthropic")+up.Path, bytes.NewReader(up.Body))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range up.Header {
				hreq.Header.Set(h.Key, h.Value)
			}
			resp, err := http.DefaultClient.Do(hreq)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			h := translator.Headers{{Key: "content-type", Value: resp.Header.Get("Content-Type")}}
			if !tr.IsStream(resp.StatusCode, h) {
				r := tr.Complete(resp.StatusCode, h, body)
				var c openaiapi.ChatCompletion
				if r.Status != http.StatusOK || json.Unmarshal(r.Body, &c) != nil || len(c.Choices) != 1 {
					t.Fatalf("provider answered %d %s; client got %d %s, want a chat completion", resp.StatusCode, body, r.Status, r.Body)
				}
				return
			}
			out := tr.StreamChunk(body, true)
			if !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
				t.Fatalf("stream %s translated to %s, want it to end with [DONE]", body, out)
			}
		})
	}
}
