package providersim_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/providersim"
)

// TestRecord checks recording mode: every request, answered or refused,
// lands in its provider's directory in arrival order, credentials
// redacted, the body as JSON when it is JSON; a simulator started again on
// the same directory numbers on.
func TestRecord(t *testing.T) {
	dir := t.TempDir()
	start := func() *providersim.Sim {
		sim, err := providersim.Start(t.Context(), providersim.Config{
			Providers: []providersim.ProviderConfig{{Name: "oa", Kind: providersim.KindOpenAI}, {Name: "gm", Kind: providersim.KindGemini}},
			RecordDir: dir,
		})
		if err != nil {
			t.Fatal(err)
		}
		return sim
	}
	sim := start()
	do(t, sim.URL("oa"), call{path: "/v1/chat/completions", header: map[string]string{"Authorization": "Bearer sk-secret-1", "X-Trace": "t1"}, body: `{"model":"gpt-4o-mini",  "messages":[{"role":"user","content":"<b>Hi</b> & bye"}], "temperature":0.50}`})
	do(t, sim.URL("oa"), call{path: "/v1/chat/completions", header: map[string]string{"Authorization": "Bearer sk-secret-1"}, body: `not json`})
	do(t, sim.URL("gm"), call{path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=secret-2", header: map[string]string{"X-Goog-Api-Key": "secret-3"}, body: `{"contents":[{"parts":[{"text":"Hi"}]}]}`})
	do(t, sim.URL("oa"), call{method: "GET", path: "/v1/models", header: map[string]string{"Cookie": "session=secret-4"}})
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}
	sim = start()
	do(t, sim.URL("oa"), call{method: "GET", path: "/v1/models/gpt-4o"})
	if err := sim.Close(); err != nil {
		t.Fatal(err)
	}

	type file struct {
		Method  string
		Path    string
		Headers map[string]string
		Body    string
	}
	want := map[string]file{
		"oa/000.json": {"POST", "/v1/chat/completions", map[string]string{"Authorization": "<redacted>", "X-Trace": "t1", "Content-Type": "application/json"}, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"<b>Hi</b> & bye"}],"temperature":0.50}`},
		"oa/001.json": {"POST", "/v1/chat/completions", map[string]string{"Authorization": "<redacted>", "Content-Type": "application/json"}, `"not json"`},
		"oa/002.json": {"GET", "/v1/models", map[string]string{"Cookie": "<redacted>", "Content-Type": "application/json"}, ``},
		"oa/003.json": {"GET", "/v1/models/gpt-4o", map[string]string{"Content-Type": "application/json"}, ``},
		"gm/000.json": {"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=<redacted>", map[string]string{"X-Goog-Api-Key": "<redacted>", "Content-Type": "application/json"}, `{"contents":[{"parts":[{"text":"Hi"}]}]}`},
	}
	got := map[string]file{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, secret := range []string{"sk-secret-1", "secret-2", "secret-3", "secret-4"} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("%s holds the credential %q", path, secret)
			}
		}
		r := readRecorded(t, path)
		for _, volatile := range []string{"Content-Length", "User-Agent", "Accept-Encoding", "Connection"} {
			delete(r.Headers, volatile)
		}
		var body bytes.Buffer
		if len(r.Body) > 0 {
			if err := json.Compact(&body, r.Body); err != nil {
				t.Errorf("%s: body %s: %v", path, r.Body, err)
			}
		}
		rel, _ := filepath.Rel(dir, path)
		got[filepath.ToSlash(rel)] = file{r.Method, r.Path, r.Headers, body.String()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded files mismatch (-want +got):\n%s", diff)
	}
}

func TestRecordRefusesPathNames(t *testing.T) {
	_, err := providersim.Start(t.Context(), providersim.Config{
		Providers: []providersim.ProviderConfig{{Name: "../oa", Kind: providersim.KindOpenAI}},
		RecordDir: t.TempDir(),
	})
	if err == nil || !strings.Contains(err.Error(), "may not hold a path") {
		t.Errorf("got %v, want a refusal of the provider name", err)
	}
}
