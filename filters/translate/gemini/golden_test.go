package gemini

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

// goldenCases lists the cases of a testdata directory by their inputs.
func goldenCases(t *testing.T, dir, inExt string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.in."+inExt))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases in testdata/%s: %v", dir, err)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = strings.TrimSuffix(filepath.Base(p), ".in."+inExt)
	}
	sort.Strings(names)
	return names
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readFile(t, path)
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// clientRequest reads the optional <case>.req.json and runs it through
// the translator, as the filter does before any answer arrives.
func clientRequest(t *testing.T, tr *Translator, dir, name, fallback string) {
	t.Helper()
	body := []byte(fallback)
	if b, err := os.ReadFile(filepath.Join("testdata", dir, name+".req.json")); err == nil {
		body = b
	}
	if isEmbedding(name) {
		req, e := wire.ParseEmbeddingsRequest(body)
		if e != nil {
			t.Fatalf("%s.req.json: %v", name, e)
		}
		if _, e := tr.EmbeddingsRequest(req, body); e != nil {
			t.Fatalf("%s.req.json: %v", name, e)
		}
		return
	}
	req, e := wire.ParseChatRequest(body)
	if e != nil {
		t.Fatalf("%s.req.json: %v", name, e)
	}
	if _, e := tr.Request(req, body); e != nil {
		t.Fatalf("%s.req.json: %v", name, e)
	}
}

// resultGolden is a translated whole answer as the golden files show it.
type resultGolden struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body"`
}

// upstreamGolden is a translated request, or its refusal.
type upstreamGolden struct {
	Path    string            `json:"path,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
	Refusal *resultGolden     `json:"refusal,omitempty"`
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

func resultOf(t *testing.T, r translator.Result) *resultGolden {
	t.Helper()
	if !json.Valid(r.Body) {
		t.Fatalf("body is not JSON: %q", r.Body)
	}
	return &resultGolden{Status: r.Status, Headers: headerMap(r.Header), Body: r.Body}
}

func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestRequestGolden: OpenAI request in, Gemini request (path, headers,
// body) or refusal out.
func TestRequestGolden(t *testing.T) {
	for _, name := range goldenCases(t, "request", "json") {
		t.Run(name, func(t *testing.T) {
			body := readFile(t, filepath.Join("testdata", "request", name+".in.json"))
			tr := New(targetFor(name))
			var up translator.Upstream
			var e *wire.Error
			if isEmbedding(name) {
				req, pe := wire.ParseEmbeddingsRequest(body)
				if pe != nil {
					t.Fatalf("the input is not a valid embeddings request: %v", pe)
				}
				up, e = tr.EmbeddingsRequest(req, body)
			} else {
				req, pe := wire.ParseChatRequest(body)
				if pe != nil {
					t.Fatalf("the input is not a valid chat request: %v", pe)
				}
				up, e = tr.Request(req, body)
			}
			var g upstreamGolden
			if e != nil {
				g.Refusal = resultOf(t, translator.ErrorResult(e))
			} else {
				if !json.Valid(up.Body) {
					t.Fatalf("upstream body is not JSON: %q", up.Body)
				}
				g = upstreamGolden{Path: up.Path, Headers: headerMap(up.Header), Body: up.Body}
			}
			checkGolden(t, filepath.Join("testdata", "request", name+".golden.json"), indentJSON(t, g))
		})
	}
}

// TestResponseGolden: Gemini's whole 200 answer in, OpenAI body out.
func TestResponseGolden(t *testing.T) {
	for _, name := range goldenCases(t, "response", "json") {
		t.Run(name, func(t *testing.T) {
			tr := New(targetFor(name))
			clientRequest(t, tr, "response", name, defaultRequest)
			body := readFile(t, filepath.Join("testdata", "response", name+".in.json"))
			h := translator.Headers{{Key: "content-type", Value: "application/json; charset=UTF-8"}}
			var r translator.Result
			if isEmbedding(name) {
				r = tr.EmbeddingsComplete(200, h, body)
			} else {
				r = tr.Complete(200, h, body)
			}
			checkGolden(t, filepath.Join("testdata", "response", name+".golden.json"), indentJSON(t, resultOf(t, r)))
		})
	}
}

// errorInput is an error case: what the provider answered.
type errorInput struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// TestErrorGolden: provider status, headers and body in, client result out.
func TestErrorGolden(t *testing.T) {
	for _, name := range goldenCases(t, "error", "json") {
		t.Run(name, func(t *testing.T) {
			var in errorInput
			if err := json.Unmarshal(readFile(t, filepath.Join("testdata", "error", name+".in.json")), &in); err != nil {
				t.Fatal(err)
			}
			var h translator.Headers
			for _, k := range sortedKeys(in.Headers) {
				h = append(h, translator.Header{Key: k, Value: in.Headers[k]})
			}
			tr := New(targetFor(name))
			clientRequest(t, tr, "error", name, defaultRequest)
			var r translator.Result
			if isEmbedding(name) {
				r = tr.EmbeddingsComplete(in.Status, h, []byte(in.Body))
			} else {
				r = tr.Complete(in.Status, h, []byte(in.Body))
			}
			got := resultOf(t, r)
			if bytes.Contains(got.Body, []byte("test-gemini-key")) {
				t.Errorf("the provider key leaked into the answer: %s", got.Body)
			}
			checkGolden(t, filepath.Join("testdata", "error", name+".golden.json"), indentJSON(t, got))
		})
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// streamThrough feeds the pieces to a fresh translator, the last with eos.
func streamThrough(t *testing.T, name string, pieces ...[]byte) []byte {
	t.Helper()
	tr := New(testTarget())
	clientRequest(t, tr, "stream", name, defaultStreamRequest)
	var out []byte
	for i, p := range pieces {
		out = append(out, tr.StreamChunk(p, i == len(pieces)-1)...)
	}
	return out
}

// TestStreamGolden: Gemini SSE in, OpenAI SSE out; then the same input cut
// at every byte offset, and at a spread of three-piece cuts, must give the
// same bytes.
func TestStreamGolden(t *testing.T) {
	for _, name := range goldenCases(t, "stream", "sse") {
		t.Run(name, func(t *testing.T) {
			in := readFile(t, filepath.Join("testdata", "stream", name+".in.sse"))
			want := streamThrough(t, name, in)
			checkGolden(t, filepath.Join("testdata", "stream", name+".golden.sse"), want)
			if got := streamThrough(t, name, in, nil); !bytes.Equal(got, want) {
				t.Fatalf("with eos in an empty last chunk:\ngot  %q\nwant %q", got, want)
			}
			for i := range len(in) + 1 {
				if got := streamThrough(t, name, in[:i], in[i:]); !bytes.Equal(got, want) {
					t.Fatalf("cut at %d:\ngot  %q\nwant %q", i, got, want)
				}
			}
			step := max(1, len(in)/23)
			for i := 0; i <= len(in); i += step {
				for j := i; j <= len(in); j += step + 3 {
					if got := streamThrough(t, name, in[:i], in[i:j], in[j:]); !bytes.Equal(got, want) {
						t.Fatalf("cut at %d and %d:\ngot  %q\nwant %q", i, j, got, want)
					}
				}
			}
		})
	}
}
