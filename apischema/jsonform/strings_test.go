package jsonform

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestEditStrings(t *testing.T) {
	upper := func(path []string, s string) (string, bool) {
		if len(path) > 0 && path[len(path)-1] == "text" {
			return strings.ToUpper(s), true
		}
		return s, false
	}
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"the strings of the path, the rest as it was", `{"model" : "m", "parts":[{"type":"text","text":"hi"},{"type":"image","n":1.5e3}], "text":"top"}`,
			`{"model" : "m", "parts":[{"type":"text","text":"HI"},{"type":"image","n":1.5e3}], "text":"TOP"}`, false},
		{"escapes read, and written as JSON needs", `{"text":"a\"b\u00e9\n"}`, `{"text":"A\"BÉ\n"}`, false},
		{"nothing edited: the same bytes", `{"a":[1,true,null,"x"]}`, `{"a":[1,true,null,"x"]}`, false},
		{"empty containers", `{"a":{},"b":[],"text":""}`, `{"a":{},"b":[],"text":""}`, false},
		{"not JSON", `{"text":"a"`, ``, true},
		{"a bad literal", `{"a":tru}`, ``, true},
		{"trailing bytes", `{"text":"a"} x`, ``, true},
	}
	for _, tt := range tests {
		got, err := EditStrings([]byte(tt.in), upper)
		if (err != nil) != tt.wantErr || string(got) != tt.want {
			t.Errorf("%s: got %s, %v; want %s, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestEditStringsPaths(t *testing.T) {
	var paths []string
	_, err := EditStrings([]byte(`{"messages":[{"content":"a"},{"content":[{"text":"b"}]}],"k":"c"}`), func(path []string, _ string) (string, bool) {
		paths = append(paths, strings.Join(path, "."))
		return "", false
	})
	want := []string{"messages.0.content", "messages.1.content.0.text", "k"}
	if err != nil || !reflect.DeepEqual(paths, want) {
		t.Errorf("paths %v, %v; want %v", paths, err, want)
	}
}

// FuzzEditStrings: an edit of every string gives the document with its
// strings edited and nothing else changed.
func FuzzEditStrings(f *testing.F) {
	for _, s := range []string{`{"a":"b","c":[1,"d",{"e":null}]}`, `"x"`, `[]`, `{"a\"b":"\u0000\ud800"}`, `[1e5,-0.5,true]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want any
		if json.Unmarshal([]byte(in), &want) != nil {
			return
		}
		got, err := EditStrings([]byte(in), func(_ []string, s string) (string, bool) { return s + "!", true })
		if err != nil {
			t.Fatalf("EditStrings(%q): %v, of a document encoding/json reads", in, err)
		}
		var edited any
		if err := json.Unmarshal(got, &edited); err != nil {
			t.Fatalf("EditStrings(%q) = %q, not JSON: %v", in, got, err)
		}
		if !reflect.DeepEqual(bang(want), edited) {
			t.Fatalf("EditStrings(%q) = %q, want every string with a '!'", in, got)
		}
	})
}

// bang is v with "!" after each string value.
func bang(v any) any {
	switch v := v.(type) {
	case string:
		return v + "!"
	case []any:
		for i := range v {
			v[i] = bang(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = bang(v[k])
		}
	}
	return v
}

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"messages.*.content", "messages.3.content", true},
		{"messages.*.content", "messages.3.content.0.text", false},
		{"messages.*.content", "messages.3", false},
		{"messages.*.content.*.input.**", "messages.0.content.1.input", true},
		{"messages.*.content.*.input.**", "messages.0.content.1.input.query.terms.2", true},
		{"messages.*.content.*.input.**", "messages.0.content.1.name", false},
		{"input", "input", true},
		{"input", "instructions", false},
	}
	for _, tt := range tests {
		if got := Patterns(tt.pattern)[0].Match(strings.Split(tt.path, ".")); got != tt.want {
			t.Errorf("%s matches %s: %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

// FuzzLiteral: a token that is neither a string, an object nor an array
// is read as encoding/json reads it.
func FuzzLiteral(f *testing.F) {
	for _, s := range []string{"0", "-0", "12", "01", "1.", "1.5", "-", "1e", "1e+5", "2E-07", ".5", "nul", "null", "true", "false", "tru", "+1", "0x1", "1.5e3.2", "--1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if in == "" || strings.ContainsAny(in, " \t\r\n\"{[") {
			return
		}
		if got, want := literal([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Fatalf("literal(%q) = %v, json.Valid %v", in, got, want)
		}
	})
}

// TestAppendString: what AppendString writes, encoding/json reads back as
// the string, bytes that are not UTF-8 as U+FFFD (encoding/json's own
// reading of them).
func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `quo"te`, `back\slash`, "new\nline\ttab\r", "\x00\x1f", "é ☃ 😀", "bad \xff\xfe utf8 \xe2\x82", "\u2028<&>"} {
		var got string
		if err := json.Unmarshal(AppendString(nil, s), &got); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want, _ := json.Marshal(s)
		var fromJSON string
		_ = json.Unmarshal(want, &fromJSON)
		if got != fromJSON {
			t.Errorf("%q read back as %q, encoding/json's as %q", s, got, fromJSON)
		}
	}
}
