package gemini

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
)

func testTarget() translator.Target {
	p := &policy.Provider{Name: "gemini", Kind: policy.KindGemini}
	return translator.Target{
		Provider: p,
		Model: &policy.Model{
			Name: "flash", Upstream: "gemini-2.5-flash", Provider: p,
			ContextWindow: 1048576, MaxOutputTokens: 8192, DefaultMaxTokens: 1024,
		},
		ClientModel: "my-flash",
		Key:         "test-gemini-key",
		ID:          "chatcmpl-0123456789abcdef",
		Created:     1767225600,
	}
}

// targetFor is the target of a golden case: embeddings cases go to an
// embedding model.
func targetFor(name string) translator.Target {
	t := testTarget()
	if isEmbedding(name) {
		m := *t.Model
		m.Name, m.Upstream = "embed", "gemini-embedding-001"
		t.Model, t.ClientModel = &m, "my-embed"
	}
	return t
}

// defaultStreamRequest is the client request of a stream case without its
// own <case>.req.json.
const defaultStreamRequest = `{"model":"my-flash","messages":[{"role":"user","content":"Hi"}],"stream":true}`

// defaultRequest is the client request of a response or error case
// without its own <case>.req.json.
const defaultRequest = `{"model":"my-flash","messages":[{"role":"user","content":"Hi"}]}`

// isEmbedding tells the cases of the embeddings API by their name.
func isEmbedding(name string) bool { return strings.HasPrefix(name, "embed_") }

// send hands a client body to tr through the API the case's name says.
func send(t *testing.T, tr *Translator, c translatortest.Case, body []byte) (translator.Upstream, *openaiapi.Error) {
	t.Helper()
	if isEmbedding(c.Name) {
		return translatortest.SendEmbeddings(t, tr, body)
	}
	return translatortest.SendChat(t, tr, body)
}

// clientRequest runs the case's client request (see
// [translatortest.Case.Request]) through the translator, as the filter
// does before any answer arrives.
func clientRequest(t *testing.T, tr *Translator, c translatortest.Case, body []byte) {
	t.Helper()
	if _, e := send(t, tr, c, body); e != nil {
		t.Fatalf("%s.req.json: %v", c.Name, e)
	}
}

// upstreamGolden is a translated request, or its refusal.
type upstreamGolden struct {
	Path    string                 `json:"path,omitempty"`
	Headers map[string]string      `json:"headers,omitempty"`
	Body    json.RawMessage        `json:"body,omitempty"`
	Refusal *translatortest.Result `json:"refusal,omitempty"`
}

// TestRequestGolden: OpenAI request in, Gemini request (path, headers,
// body) or refusal out.
func TestRequestGolden(t *testing.T) {
	translatortest.Run(t, "request", "json", func(t *testing.T, c translatortest.Case) {
		up, e := send(t, New(targetFor(c.Name)), c, c.Input(t))
		var g upstreamGolden
		if e != nil {
			g.Refusal = translatortest.ResultOf(t, translator.ErrorResult(e))
		} else {
			if !json.Valid(up.Body) {
				t.Fatalf("upstream body is not JSON: %q", up.Body)
			}
			g = upstreamGolden{Path: up.Path, Headers: translatortest.HeaderMap(up.Header), Body: up.Body}
		}
		c.Check(t, translatortest.JSON(t, g))
	})
}

// TestResponseGolden: Gemini's whole 200 answer in, OpenAI body out.
func TestResponseGolden(t *testing.T) {
	translatortest.Run(t, "response", "json", func(t *testing.T, c translatortest.Case) {
		tr := New(targetFor(c.Name))
		clientRequest(t, tr, c, c.Request(defaultRequest))
		body := c.Input(t)
		h := translator.Headers{{Key: "content-type", Value: "application/json; charset=UTF-8"}}
		var r translator.Result
		if isEmbedding(c.Name) {
			r = tr.EmbeddingsComplete(200, h, body)
		} else {
			r = tr.Complete(200, h, body)
		}
		c.Check(t, translatortest.JSON(t, translatortest.ResultOf(t, r)))
	})
}

// errorInput is an error case: what the provider answered.
type errorInput struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// TestErrorGolden: provider status, headers and body in, client result out.
func TestErrorGolden(t *testing.T) {
	translatortest.Run(t, "error", "json", func(t *testing.T, c translatortest.Case) {
		var in errorInput
		if err := json.Unmarshal(c.Input(t), &in); err != nil {
			t.Fatal(err)
		}
		h := translatortest.Headers(in.Headers)
		tr := New(targetFor(c.Name))
		clientRequest(t, tr, c, c.Request(defaultRequest))
		var r translator.Result
		if isEmbedding(c.Name) {
			r = tr.EmbeddingsComplete(in.Status, h, []byte(in.Body))
		} else {
			r = tr.Complete(in.Status, h, []byte(in.Body))
		}
		got := translatortest.ResultOf(t, r)
		if bytes.Contains(got.Body, []byte("test-gemini-key")) {
			t.Errorf("the provider key leaked into the answer: %s", got.Body)
		}
		c.Check(t, translatortest.JSON(t, got))
	})
}

// TestStreamGolden: Gemini SSE in, OpenAI SSE out, however Envoy cuts the
// input.
func TestStreamGolden(t *testing.T) {
	translatortest.Streams(t, func(t *testing.T, c translatortest.Case) func() translator.Translator {
		req := c.Request(defaultStreamRequest)
		return func() translator.Translator {
			tr := New(testTarget())
			clientRequest(t, tr, c, req)
			return tr
		}
	})
}
