package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
)

// The golden files live under testdata/<kind>/:
//
//	request/<case>.in.json      OpenAI request body
//	request/<case>.golden.json  the upstream request (path, headers, body) or the refusal
//	response/<case>.in.json     Anthropic message body (status 200)
//	response/<case>.golden.json the client's result (status, headers, body)
//	error/<case>.in.json        {"status","headers","body"}: a provider answer, body as a string
//	error/<case>.golden.json    the client's result
//	stream/<case>.in.sse        Anthropic SSE bytes
//	stream/<case>.golden.sse    the client's SSE bytes
//
// A response or stream case may add <case>.req.json, the OpenAI request
// that preceded it (JSON mode, include_usage); without one the default
// request below is used.

const (
	defaultRequest       = `{"model":"claude-sonnet","messages":[{"role":"user","content":"Hi"}]}`
	defaultStreamRequest = `{"model":"claude-sonnet","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]}`
)

func testTarget() translator.Target {
	p := &policy.Provider{Name: "anthropic", Kind: policy.KindAnthropic}
	return translator.Target{
		Provider:    p,
		Model:       &policy.Model{Name: "claude-sonnet", Upstream: "claude-sonnet-4-5", Provider: p, ContextWindow: 200000, MaxOutputTokens: 64000, DefaultMaxTokens: 4096},
		ClientModel: "claude-sonnet",
		Key:         "test-key-0001",
		ID:          "chatcmpl-test0001",
		Created:     1767225600,
	}
}

// newWith builds a translator that has translated the OpenAI request raw,
// as the translate filter does before the answer arrives.
func newWith(t testing.TB, raw []byte) *Translator {
	t.Helper()
	tr := New(testTarget())
	if _, e := translatortest.SendChat(t, tr, raw); e != nil {
		t.Fatalf("request: %v", e)
	}
	return tr
}

func TestRequestGolden(t *testing.T) {
	translatortest.Run(t, "request", "json", func(t *testing.T, c translatortest.Case) {
		up, e := translatortest.SendChat(t, New(testTarget()), c.Input(t))
		var got any
		if e != nil {
			got = translatortest.Result{Status: e.Status, Body: e.Body()}
		} else {
			got = struct {
				Path    string            `json:"path"`
				Headers map[string]string `json:"headers"`
				Body    json.RawMessage   `json:"body"`
			}{up.Path, translatortest.HeaderMap(up.Header), up.Body}
		}
		c.Check(t, translatortest.JSON(t, got))
	})
}

func TestResponseGolden(t *testing.T) {
	translatortest.Run(t, "response", "json", func(t *testing.T, c translatortest.Case) {
		tr := newWith(t, c.Request(defaultRequest))
		r := tr.Complete(200, translator.Headers{{Key: "content-type", Value: "application/json"}}, c.Input(t))
		c.Check(t, translatortest.JSON(t, translatortest.ResultOf(t, r)))
	})
}

func TestErrorGolden(t *testing.T) {
	translatortest.Run(t, "error", "json", func(t *testing.T, c translatortest.Case) {
		var in struct {
			Status  int               `json:"status"`
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
		}
		if err := json.Unmarshal(c.Input(t), &in); err != nil {
			t.Fatal(err)
		}
		tr := newWith(t, c.Request(defaultRequest))
		r := tr.Complete(in.Status, translatortest.Headers(in.Headers), []byte(in.Body))
		c.Check(t, translatortest.JSON(t, translatortest.ResultOf(t, r)))
		if r.Status >= 200 && r.Status < 300 {
			t.Errorf("got status %d for a provider error, want an error status", r.Status)
		}
	})
}

// TestStreamGolden: Anthropic SSE in, OpenAI SSE out, however Envoy cuts
// the input.
func TestStreamGolden(t *testing.T) {
	translatortest.Streams(t, func(t *testing.T, c translatortest.Case) func() translator.Translator {
		raw := c.Request(defaultStreamRequest)
		return func() translator.Translator { return newWith(t, raw) }
	})
}
