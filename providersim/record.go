package providersim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// recorder writes every request one provider receives to its own JSON
// file (Config.RecordDir), so that a real client pointed at a simulator
// leaves fixtures that can be committed: credentials are redacted, the
// rest is as received.
type recorder struct {
	dir  string
	next int // the number of the next file; the provider's mutex guards it
}

// recordedFile is one request on disk. The body is its JSON when it parses
// (key order, numbers and escapes kept; only whitespace is re-indented),
// else the raw body as a JSON string.
type recordedFile struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"` // with the query
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

const redacted = "<redacted>"

// newRecorder makes dir and numbers on from the files already there, so a
// restarted simulator adds to a recording instead of overwriting it.
func newRecorder(dir string) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	rec := &recorder{dir: dir}
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json")); err == nil && n >= rec.next {
			rec.next = n + 1
		}
	}
	return rec, nil
}

// write stores request number n.
func (rec *recorder) write(n int, r *http.Request, body []byte) error {
	f := recordedFile{Method: r.Method, Path: recordedPath(r), Headers: map[string]string{}}
	for name, values := range r.Header {
		v := strings.Join(values, ", ")
		if credentialHeader(name) {
			v = redacted
		}
		f.Headers[name] = v
	}
	switch {
	case len(body) == 0:
	case json.Valid(body):
		f.Body = body
	default:
		f.Body = jsonString(string(body))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(rec.dir, fmt.Sprintf("%03d.json", n)), b.Bytes(), 0o644)
}

// credentialHeader reports whether a header may carry a secret: every
// provider's key header (Authorization, x-api-key, api-key,
// x-goog-api-key), cookies, and whatever else names a key or token.
func credentialHeader(name string) bool {
	name = strings.ToLower(name)
	for _, word := range []string{"auth", "key", "token", "secret", "cookie", "password", "credential"} {
		if strings.Contains(name, word) {
			return true
		}
	}
	return false
}

// recordedPath is the path with its query, Gemini's ?key= redacted.
func recordedPath(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return r.URL.EscapedPath()
	}
	params := strings.Split(r.URL.RawQuery, "&")
	for i, p := range params {
		if name, _, _ := strings.Cut(p, "="); name == "key" {
			params[i] = "key=" + redacted
		}
	}
	return r.URL.EscapedPath() + "?" + strings.Join(params, "&")
}
