package translatortest

import (
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Case is one golden case: the input testdata/<Dir>/<Name>.in.<Ext> and the
// golden file testdata/<Dir>/<Name>.golden.<Ext>.
type Case struct {
	Dir, Name, Ext string
}

// Path returns the path of the case's file that ends in suffix, such as
// ".req.json" for a companion file.
func (c Case) Path(suffix string) string {
	return filepath.Join("testdata", c.Dir, c.Name+suffix)
}

// Input returns the bytes of the case's input file.
func (c Case) Input(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(c.Path(".in." + c.Ext))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Request returns the client's request that preceded the case's answer:
// the case's companion file <case>.req.json, or fallback when it has none.
func (c Case) Request(fallback string) []byte {
	if b, err := os.ReadFile(c.Path(".req.json")); err == nil {
		return b
	}
	return []byte(fallback)
}

// Check compares got with the case's golden file, or with -update rewrites
// the file with got.
func (c Case) Check(tb testing.TB, got []byte) {
	tb.Helper()
	path := c.Path(".golden." + c.Ext)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		tb.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// Cases lists the cases of testdata/<dir> by their input files, sorted by
// name. A directory without cases fails tb: a glob that matches nothing
// must not pass as a suite that found nothing wrong.
func Cases(tb testing.TB, dir, ext string) []Case {
	tb.Helper()
	suffix := ".in." + ext
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*"+suffix))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no cases in testdata/%s: %v", dir, err)
	}
	cases := make([]Case, len(paths))
	for i, p := range paths {
		cases[i] = Case{Dir: dir, Name: strings.TrimSuffix(filepath.Base(p), suffix), Ext: ext}
	}
	slices.SortFunc(cases, func(a, b Case) int { return strings.Compare(a.Name, b.Name) })
	return cases
}

// Run runs f for each case of testdata/<dir> as a parallel subtest named
// for the case.
func Run(t *testing.T, dir, ext string, f func(t *testing.T, c Case)) {
	t.Helper()
	for _, c := range Cases(t, dir, ext) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			f(t, c)
		})
	}
}

// JSON renders v as golden files hold it: indented by two spaces, with a
// final newline.
func JSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return append(b, '\n')
}

// HeaderMap returns h as a map for a golden file; nil when h is empty, so
// that an omitempty field leaves it out.
func HeaderMap(h translator.Headers) map[string]string {
	if len(h) == 0 {
		return nil
	}
	m := make(map[string]string, len(h))
	for _, kv := range h {
		m[kv.Key] = kv.Value
	}
	return m
}

// Headers returns the headers of a case's input in key order, so that a
// run does not depend on map order.
func Headers(m map[string]string) translator.Headers {
	var h translator.Headers
	for _, k := range slices.Sorted(maps.Keys(m)) {
		h = append(h, translator.Header{Key: k, Value: m[k]})
	}
	return h
}

// SendChat parses raw as a client's chat request and hands it to tr, as the
// translate filter does; a body the gateway would not accept fails tb.
func SendChat(tb testing.TB, tr translator.Translator, raw []byte) (translator.Upstream, *openaiapi.Error) {
	tb.Helper()
	req, e := openaiapi.ParseChatRequest(raw)
	if e != nil {
		tb.Fatalf("the chat request does not parse: %v", e)
	}
	return tr.Request(req, raw)
}

// SendEmbeddings parses raw as a client's embeddings request and hands it
// to tr; a body the gateway would not accept fails tb.
func SendEmbeddings(tb testing.TB, tr translator.Embedder, raw []byte) (translator.Upstream, *openaiapi.Error) {
	tb.Helper()
	req, e := openaiapi.ParseEmbeddingsRequest(raw)
	if e != nil {
		tb.Fatalf("the embeddings request does not parse: %v", e)
	}
	return tr.EmbeddingsRequest(req, raw)
}

// Result is a translated answer (or a refusal) as the golden files show it.
type Result struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body"`
}

// ResultOf is r as the golden files show it; its body must be JSON.
func ResultOf(t testing.TB, r translator.Result) *Result {
	t.Helper()
	if !json.Valid(r.Body) {
		t.Fatalf("body is not JSON: %q", r.Body)
	}
	return &Result{Status: r.Status, Headers: HeaderMap(r.Header), Body: r.Body}
}
