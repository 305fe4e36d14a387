package anthropic

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
	wire "github.com/switchyard/switchyard/filters/openai"
	"github.com/switchyard/switchyard/filters/translate/translator"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

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

// cases lists the case names of one kind, from the input files.
func cases(t *testing.T, kind, ext string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", kind, "*.in."+ext))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s cases: %v", kind, err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".in."+ext))
	}
	return names
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkGolden compares got with the golden file, or rewrites it under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := read(t, path)
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// newFor builds a translator that has seen the case's request, as the
// translate filter does before the answer arrives.
func newFor(t *testing.T, kind, name, fallback string) *Translator {
	t.Helper()
	raw := []byte(fallback)
	if b, err := os.ReadFile(filepath.Join("testdata", kind, name+".req.json")); err == nil {
		raw = b
	}
	return newWith(t, raw)
}

// newWith builds a translator that has translated the OpenAI request raw.
func newWith(t testing.TB, raw []byte) *Translator {
	t.Helper()
	req, perr := wire.ParseChatRequest(raw)
	if perr != nil {
		t.Fatalf("request: %v", perr)
	}
	tr := New(testTarget())
	if _, e := tr.Request(req, raw); e != nil {
		t.Fatalf("request: %v", e)
	}
	return tr
}

// jsonOrString keeps a JSON body as JSON in the golden file and anything
// else as a string, so the golden shows what the client would get.
func jsonOrString(b []byte) json.RawMessage {
	if json.Valid(b) {
		return b
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
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

type resultGolden struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body"`
}

func TestRequestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range cases(t, "request", "json") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw := read(t, filepath.Join("testdata", "request", name+".in.json"))
			req, perr := wire.ParseChatRequest(raw)
			if perr != nil {
				t.Fatalf("parse: %v", perr)
			}
			up, e := New(testTarget()).Request(req, raw)
			var got any
			if e != nil {
				got = resultGolden{Status: e.Status, Body: e.Body()}
			} else {
				got = struct {
					Path    string            `json:"path"`
					Headers map[string]string `json:"headers"`
					Body    json.RawMessage   `json:"body"`
				}{up.Path, headerMap(up.Header), up.Body}
			}
			checkGolden(t, filepath.Join("testdata", "request", name+".golden.json"), indent(t, got))
		})
	}
}

func TestResponseGolden(t *testing.T) {
	t.Parallel()
	for _, name := range cases(t, "response", "json") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr := newFor(t, "response", name, defaultRequest)
			r := tr.Complete(200, translator.Headers{{Key: "content-type", Value: "application/json"}}, read(t, filepath.Join("testdata", "response", name+".in.json")))
			got := resultGolden{Status: r.Status, Headers: headerMap(r.Header), Body: jsonOrString(r.Body)}
			checkGolden(t, filepath.Join("testdata", "response", name+".golden.json"), indent(t, got))
		})
	}
}

func TestErrorGolden(t *testing.T) {
	t.Parallel()
	for _, name := range cases(t, "error", "json") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var in struct {
				Status  int               `json:"status"`
				Headers map[string]string `json:"headers"`
				Body    string            `json:"body"`
			}
			if err := json.Unmarshal(read(t, filepath.Join("testdata", "error", name+".in.json")), &in); err != nil {
				t.Fatal(err)
			}
			var h translator.Headers
			for k, v := range in.Headers {
				h = append(h, translator.Header{Key: k, Value: v})
			}
			tr := newFor(t, "error", name, defaultRequest)
			r := tr.Complete(in.Status, h, []byte(in.Body))
			got := resultGolden{Status: r.Status, Headers: headerMap(r.Header), Body: jsonOrString(r.Body)}
			checkGolden(t, filepath.Join("testdata", "error", name+".golden.json"), indent(t, got))
			if r.Status >= 200 && r.Status < 300 {
				t.Errorf("got status %d for a provider error, want an error status", r.Status)
			}
		})
	}
}

// translateStream feeds the pieces in order, the last with eos.
func translateStream(tr *Translator, pieces ...[]byte) []byte {
	var out []byte
	for i, p := range pieces {
		out = append(out, tr.StreamChunk(p, i == len(pieces)-1)...)
	}
	return out
}

func TestStreamGolden(t *testing.T) {
	t.Parallel()
	for _, name := range cases(t, "stream", "sse") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := read(t, filepath.Join("testdata", "stream", name+".in.sse"))
			got := translateStream(newFor(t, "stream", name, defaultStreamRequest), in)
			checkGolden(t, filepath.Join("testdata", "stream", name+".golden.sse"), got)
			// eos may also come alone, after the last bytes.
			if late := translateStream(newFor(t, "stream", name, defaultStreamRequest), in, nil); !bytes.Equal(late, got) {
				t.Errorf("eos in a separate empty chunk: got\n%s\nwant\n%s", late, got)
			}
		})
	}
}

// TestStreamEverySplit replays every stream golden cut in two at every byte
// offset, and in three at a spread of offsets: Envoy's chunk boundaries
// never align with events, and the output must not depend on them.
func TestStreamEverySplit(t *testing.T) {
	t.Parallel()
	if *update {
		t.Skip("goldens are being rewritten")
	}
	for _, name := range cases(t, "stream", "sse") {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := read(t, filepath.Join("testdata", "stream", name+".in.sse"))
			want := read(t, filepath.Join("testdata", "stream", name+".golden.sse"))
			for i := range len(in) + 1 {
				got := translateStream(newFor(t, "stream", name, defaultStreamRequest), in[:i], in[i:])
				if !bytes.Equal(got, want) {
					t.Fatalf("cut at %d: got\n%s\nwant\n%s", i, got, want)
				}
			}
			for i := 0; i <= len(in); i += 11 {
				for _, step := range []int{1, 2, 17, 64} {
					j := min(i+step, len(in))
					got := translateStream(newFor(t, "stream", name, defaultStreamRequest), in[:i], in[i:j], in[j:])
					if !bytes.Equal(got, want) {
						t.Fatalf("cut at %d and %d: got\n%s\nwant\n%s", i, j, got, want)
					}
				}
			}
		})
	}
}
