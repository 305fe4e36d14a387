package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
	"github.com/switchyard/switchyard/translator/translatortest"
)

// caseTarget describes the attempt a golden case runs: unset fields take
// the defaults of target().
type caseTarget struct {
	Kind        string `json:"kind"`
	Dialect     string `json:"dialect"`
	BasePath    string `json:"base_path"`
	APIVersion  string `json:"api_version"`
	Upstream    string `json:"upstream"`
	MaxOutput   int    `json:"max_output_tokens"`
	ClientModel string `json:"client_model"`
	NoKey       bool   `json:"no_key"`
}

// caseIn is a request, response or error case: a target, the client's
// request (for response cases, what the answer must honour) and, for
// answers, the provider's status, headers and body (JSON in body, anything
// else in body_text).
type caseIn struct {
	Target   caseTarget        `json:"target"`
	Endpoint string            `json:"endpoint"`
	Request  json.RawMessage   `json:"request"`
	Status   int               `json:"status"`
	Header   map[string]string `json:"header"`
	Body     json.RawMessage   `json:"body"`
	BodyText *string           `json:"body_text"`
}

const testKey = "test-provider-key"

func target(ct caseTarget) translator.Target {
	kind := policy.Kind(ct.Kind)
	if kind == "" {
		kind = policy.KindOpenAI
	}
	t := translator.Target{
		Provider:    &policy.Provider{Name: "prov", Kind: kind, BasePath: ct.BasePath, APIVersion: ct.APIVersion},
		Model:       &policy.Model{Name: "client-model", Upstream: ct.Upstream, MaxOutputTokens: ct.MaxOutput, DefaultMaxTokens: 1024},
		ClientModel: ct.ClientModel,
		Key:         testKey,
		ID:          "chatcmpl-gw0001",
		Created:     1767225600,
	}
	if t.Model.Upstream == "" {
		t.Model.Upstream = "upstream-model"
	}
	if t.Model.MaxOutputTokens == 0 {
		t.Model.MaxOutputTokens = 16384
	}
	if t.ClientModel == "" {
		t.ClientModel = "client-model"
	}
	if ct.NoKey {
		t.Key = ""
	}
	return t
}

// start builds the translator of a case and sends it the client's request.
func start(tb testing.TB, ct caseTarget, endpoint string, req []byte) (*Translator, translator.Upstream, *openaiapi.Error) {
	tb.Helper()
	tr := NewWithDialect(target(ct), Dialect(ct.Dialect))
	var buf bytes.Buffer
	if err := json.Compact(&buf, req); err != nil {
		tb.Fatalf("request is not JSON: %v", err)
	}
	if endpoint == "embeddings" {
		up, e := translatortest.SendEmbeddings(tb, tr, buf.Bytes())
		return tr, up, e
	}
	up, e := translatortest.SendChat(tb, tr, buf.Bytes())
	return tr, up, e
}

func readCase(t *testing.T, c translatortest.Case) caseIn {
	t.Helper()
	var in caseIn
	if err := json.Unmarshal(c.Input(t), &in); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return in
}

// requestGolden is what a request case renders: the provider request, or
// the refusal.
type requestGolden struct {
	Path   string            `json:"path,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	Body   json.RawMessage   `json:"body,omitempty"`
	Error  *answerGolden     `json:"error,omitempty"`
}

// answerGolden is what the client gets, and for answers the usage the
// translator reports to the gateway.
type answerGolden struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Body   json.RawMessage   `json:"body"`
	Usage  *openaiapi.Usage  `json:"usage,omitempty"`
}

// TestGoldenRequest: client request in, provider request (path, headers,
// body) or refusal out.
func TestGoldenRequest(t *testing.T) {
	translatortest.Run(t, "request", "json", func(t *testing.T, c translatortest.Case) {
		in := readCase(t, c)
		_, up, e := start(t, in.Target, in.Endpoint, in.Request)
		var got requestGolden
		if e != nil {
			got.Error = &answerGolden{Status: e.Status, Header: e.Headers, Body: json.RawMessage(e.Body())}
		} else {
			if !json.Valid(up.Body) {
				t.Fatalf("body is not JSON: %s", up.Body)
			}
			got = requestGolden{Path: up.Path, Header: translatortest.HeaderMap(up.Header), Body: json.RawMessage(up.Body)}
		}
		c.Check(t, translatortest.JSON(t, got))
	})
}

// answerCase runs a response or error case through Complete (or
// EmbeddingsComplete) and renders what the client gets, with the usage the
// translator reports.
func answerCase(t *testing.T, c caseIn) []byte {
	t.Helper()
	req := c.Request
	if req == nil {
		req = json.RawMessage(`{"model":"client-model","messages":[{"role":"user","content":"Hi"}]}`)
		if c.Endpoint == "embeddings" {
			req = json.RawMessage(`{"model":"client-model","input":"Hi"}`)
		}
	}
	tr, _, e := start(t, c.Target, c.Endpoint, req)
	if e != nil {
		t.Fatalf("Request: %v", e)
	}
	body := []byte(c.Body)
	if c.BodyText != nil {
		body = []byte(*c.BodyText)
	}
	h := translatortest.Headers(c.Header)
	var r translator.Result
	if c.Endpoint == "embeddings" {
		r = tr.EmbeddingsComplete(c.Status, h, body)
	} else {
		r = tr.Complete(c.Status, h, body)
	}
	if !json.Valid(r.Body) {
		t.Fatalf("body is not JSON: %s", r.Body)
	}
	got := answerGolden{Status: r.Status, Header: translatortest.HeaderMap(r.Header), Body: json.RawMessage(r.Body)}
	if u, ok := tr.Usage(); ok {
		got.Usage = &u
	}
	return translatortest.JSON(t, got)
}

// TestGoldenResponse: provider body in, client body out.
func TestGoldenResponse(t *testing.T) {
	translatortest.Run(t, "response", "json", func(t *testing.T, c translatortest.Case) {
		c.Check(t, answerCase(t, readCase(t, c)))
	})
}

// TestGoldenError: provider error (status, headers, body) in, client
// envelope out.
func TestGoldenError(t *testing.T) {
	translatortest.Run(t, "error", "json", func(t *testing.T, c translatortest.Case) {
		c.Check(t, answerCase(t, readCase(t, c)))
	})
}

// streamCase is a stream input: its first line is an SSE comment
// ": case {json}" naming the target and the client's request, which the
// translator skips like any comment.
type streamCase struct {
	Target  caseTarget      `json:"target"`
	Request json.RawMessage `json:"request"`
}

func readStream(tb testing.TB, path string) (streamCase, []byte) {
	tb.Helper()
	in, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	line, _, _ := bytes.Cut(in, []byte("\n"))
	conf, ok := bytes.CutPrefix(line, []byte(": case "))
	if !ok {
		tb.Fatalf("%s: first line must be \": case {...}\"", path)
	}
	var sc streamCase
	if err := json.Unmarshal(conf, &sc); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if sc.Request == nil {
		sc.Request = json.RawMessage(`{"model":"client-model","messages":[{"role":"user","content":"Hi"}],"stream":true}`)
	}
	return sc, in
}

// streamTranslator builds the translator of a stream case, which has
// seen the case's request.
func streamTranslator(tb testing.TB, sc streamCase) *Translator {
	tb.Helper()
	tr, _, e := start(tb, sc.Target, "", sc.Request)
	if e != nil {
		tb.Fatalf("Request: %v", e)
	}
	return tr
}

// runStream feeds the input in the given pieces, the last with eos.
func runStream(tb testing.TB, sc streamCase, pieces ...[]byte) ([]byte, *Translator) {
	tb.Helper()
	tr := streamTranslator(tb, sc)
	return translatortest.Feed(tr, pieces...), tr
}

// TestGoldenStream: provider SSE in, client SSE out, however the input is
// cut.
func TestGoldenStream(t *testing.T) {
	translatortest.Streams(t, func(t *testing.T, c translatortest.Case) func() translator.Translator {
		sc, _ := readStream(t, c.Path(".in.sse"))
		return func() translator.Translator { return streamTranslator(t, sc) }
	})
}
