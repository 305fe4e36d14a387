package openaiapi

import (
	"encoding/json"
	"testing"
)

// TestContentString: a string content reads the same whether it takes the
// no-escape shortcut or the decoder: escapes, non-ASCII, invalid UTF-8
// (replaced, as encoding/json does) and the empty string.
func TestContentString(t *testing.T) {
	for _, raw := range []string{
		`""`, `"hello"`, `"héllo wörld ✓"`, `"a\"b"`, `"line\nbreak"`, `"\u00e9\ud83d\ude00"`, `"tab\there"`, "\"\xff\xfe\"", `"back\\slash"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		var m Message
		if err := json.Unmarshal([]byte(`{"role":"user","content":`+raw+`}`), &m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if !m.Content.Set || m.Content.IsParts || m.Content.Text != want {
			t.Errorf("%s: content %+v, want text %q", raw, m.Content, want)
		}
	}
}
