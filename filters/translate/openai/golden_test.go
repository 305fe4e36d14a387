package openai

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	wire "github.com/switchyard/switchyard/filters/openai"
	"github.com/switchyard/switchyard/filters/translate/translator"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

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
func start(tb testing.TB, ct caseTarget, endpoint string, req []byte) (*Translator, translator.Upstream, *wire.Error) {
	tb.Helper()
	tr := NewWithDialect(target(ct), Dialect(ct.Dialect))
	var buf bytes.Buffer
	if err := json.Compact(&buf, req); err != nil {
		tb.Fatalf("request is not JSON: %v", err)
	}
	raw := buf.Bytes()
	if endpoint == "embeddings" {
		r, e := wire.ParseEmbeddingsRequest(raw)
		if e != nil {
			tb.Fatalf("ParseEmbeddingsRequest: %v", e)
		}
		up, e := tr.EmbeddingsRequest(r, raw)
		return tr, up, e
	}
	r, e := wire.ParseChatRequest(raw)
	if e != nil {
		tb.Fatalf("ParseChatRequest: %v", e)
	}
	up, e := tr.Request(r, raw)
	return tr, up, e
}

func readCase(t *testing.T, path string) caseIn {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c caseIn
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// checkGolden compares got with the golden file, or rewrites it.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// jsonOrText embeds valid JSON as it is and anything else as a string.
func jsonOrText(b []byte) json.RawMessage {
	if json.Valid(b) && len(bytes.TrimSpace(b)) > 0 {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}

func headerMap(h translator.Headers) map[string]string {
	if len(h) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, kv := range h {
		m[kv.Key] = kv.Value
	}
	return m
}

func indent(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func cases(t *testing.T, dir, suffix string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no cases in testdata/%s", dir)
	}
	sort.Strings(paths)
	return paths
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
	Usage  *wire.Usage       `json:"usage,omitempty"`
}

// TestGoldenRequest: client request in, provider request (path, headers,
// body) or refusal out.
func TestGoldenRequest(t *testing.T) {
	for _, in := range cases(t, "request", ".in.json") {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			c := readCase(t, in)
			_, up, e := start(t, c.Target, c.Endpoint, c.Request)
			var got requestGolden
			if e != nil {
				got.Error = &answerGolden{Status: e.Status, Header: e.Headers, Body: json.RawMessage(e.Body())}
			} else {
				if !json.Valid(up.Body) {
					t.Fatalf("body is not JSON: %s", up.Body)
				}
				got = requestGolden{Path: up.Path, Header: headerMap(up.Header), Body: json.RawMessage(up.Body)}
			}
			checkGolden(t, strings.TrimSuffix(in, ".in.json")+".golden.json", indent(t, got))
		})
	}
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
	var h translator.Headers
	for k, v := range c.Header {
		h = append(h, translator.Header{Key: k, Value: v})
	}
	var r translator.Result
	if c.Endpoint == "embeddings" {
		r = tr.EmbeddingsComplete(c.Status, h, body)
	} else {
		r = tr.Complete(c.Status, h, body)
	}
	if !json.Valid(r.Body) {
		t.Fatalf("body is not JSON: %s", r.Body)
	}
	got := answerGolden{Status: r.Status, Header: headerMap(r.Header), Body: json.RawMessage(r.Body)}
	if u, ok := tr.Usage(); ok {
		got.Usage = &u
	}
	return indent(t, got)
}

// TestGoldenResponse: provider body in, client body out.
func TestGoldenResponse(t *testing.T) {
	for _, in := range cases(t, "response", ".in.json") {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			checkGolden(t, strings.TrimSuffix(in, ".in.json")+".golden.json", answerCase(t, readCase(t, in)))
		})
	}
}

// TestGoldenError: provider error (status, headers, body) in, client
// envelope out.
func TestGoldenError(t *testing.T) {
	for _, in := range cases(t, "error", ".in.json") {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			checkGolden(t, strings.TrimSuffix(in, ".in.json")+".golden.json", answerCase(t, readCase(t, in)))
		})
	}
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

// runStream feeds the input in the given pieces, the last with eos.
func runStream(tb testing.TB, sc streamCase, pieces ...[]byte) ([]byte, *Translator) {
	tb.Helper()
	tr, _, e := start(tb, sc.Target, "", sc.Request)
	if e != nil {
		tb.Fatalf("Request: %v", e)
	}
	var out []byte
	for i, p := range pieces {
		out = append(out, tr.StreamChunk(p, i == len(pieces)-1)...)
	}
	return out, tr
}

// TestGoldenStream: provider SSE in, client SSE out; the input is also cut
// at every byte offset (and at many pairs of offsets) and must give the
// same bytes.
func TestGoldenStream(t *testing.T) {
	for _, in := range cases(t, "stream", ".in.sse") {
		name := strings.TrimSuffix(filepath.Base(in), ".in.sse")
		t.Run(name, func(t *testing.T) {
			sc, b := readStream(t, in)
			got, _ := runStream(t, sc, b)
			checkGolden(t, strings.TrimSuffix(in, ".in.sse")+".golden.sse", got)
			for k := 0; k <= len(b); k++ {
				if cut, _ := runStream(t, sc, b[:k], b[k:]); !bytes.Equal(cut, got) {
					t.Fatalf("cut at %d: got\n%s\nwant\n%s", k, cut, got)
				}
			}
			for i := 0; i < len(b); i += 13 {
				j := i + (len(b)-i)/3
				if cut, _ := runStream(t, sc, b[:i], b[i:j], b[j:]); !bytes.Equal(cut, got) {
					t.Fatalf("cut at %d and %d: got\n%s\nwant\n%s", i, j, cut, got)
				}
			}
		})
	}
}
