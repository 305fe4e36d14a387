package openai

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// membersOf reads an object with the scanner: canonical keys to compacted
// values, the last duplicate winning as in encoding/json.
func membersOf(t *testing.T, b []byte) (map[string]string, bool) {
	t.Helper()
	m, ok := objectMembers(b)
	if !ok {
		return nil, false
	}
	got := map[string]string{}
	for {
		k, v, more := m.next()
		if !more {
			break
		}
		var key string
		if err := json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &key); err != nil {
			t.Fatalf("key %q does not unescape: %v", k, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			t.Fatalf("value %q of %q is not JSON: %v", v, key, err)
		}
		got[key] = c.String()
	}
	return got, !m.bad
}

func TestObjectMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantBad bool
	}{
		{"plain", `{"a":1,"b":"x"}`, map[string]string{"a": "1", "b": `"x"`}, false},
		{"spaces everywhere", " { \"a\" : [ 1 , 2 ] ,\n\"b\" :\t{ } } ", map[string]string{"a": "[1,2]", "b": "{}"}, false},
		{"escaped quote in string", `{"a":"say \"hi\"","b":2}`, map[string]string{"a": `"say \"hi\""`, "b": "2"}, false},
		{"escaped backslash before quote", `{"a":"C:\\","b":[]}`, map[string]string{"a": `"C:\\"`, "b": "[]"}, false},
		{"brackets inside strings", `{"a":"}]{[","b":{"c":"]"}}`, map[string]string{"a": `"}]{["`, "b": `{"c":"]"}`}, false},
		{"escaped key", `{"mod\u0065l":true}`, map[string]string{"model": "true"}, false},
		{"literals", `{"a":null,"b":false,"c":-1.5e3}`, map[string]string{"a": "null", "b": "false", "c": "-1.5e3"}, false},
		{"empty", `{}`, map[string]string{}, false},
		{"truncated", `{"a":1,"b":`, map[string]string{"a": "1"}, true},
		{"unclosed string", `{"a":"xyz`, map[string]string{}, true},
		{"missing colon", `{"a" 1}`, map[string]string{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, ok := objectMembers([]byte(tt.in))
			if !ok {
				t.Fatalf("got no object in %q", tt.in)
			}
			got := map[string]string{}
			for {
				k, v, more := m.next()
				if !more {
					break
				}
				var kb keyBuf
				var c bytes.Buffer
				if err := json.Compact(&c, v); err != nil {
					t.Fatalf("value %q is not JSON: %v", v, err)
				}
				got[string(kb.canon(k))] = c.String()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			if m.bad != tt.wantBad {
				t.Errorf("got bad %v, want %v", m.bad, tt.wantBad)
			}
		})
	}
}

func TestCanon(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"lower", "model", "model"},
		{"upper", "MAX_Tokens", "max_tokens"},
		{"escaped", `mod\u0065l`, "model"},
		{"escaped upper", `\u004dODEL`, "model"},
		{"too long for any known name", "this_key_is_far_too_long_to_be_a_field_we_own", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var kb keyBuf
			if got := string(kb.canon([]byte(tt.in))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsEmptyValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"null", true}, {"false", true}, {`""`, true}, {"{}", true}, {"[]", true}, {"{ }", true}, {"[\n]", true},
		{"true", false}, {"0", false}, {`"x"`, false}, {`{"a":1}`, false}, {"[0]", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := isEmptyValue([]byte(tt.in)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzObjectMembers: on any valid JSON object the scanner sees the members
// encoding/json sees.
func FuzzObjectMembers(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":"\"}","b":[{"c":"\\"}]}`, `{"k\u00e9y":null,"k\u00e9y":2}`, ` {"x" : { "y" : [ ] } } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want map[string]json.RawMessage
		if !json.Valid(b) || json.Unmarshal(b, &want) != nil || want == nil {
			return
		}
		got, ok := membersOf(t, b)
		if !ok {
			t.Fatalf("scanner failed on a valid object: %q", b)
		}
		wantC := map[string]string{}
		for k, v := range want {
			var c bytes.Buffer
			if err := json.Compact(&c, v); err != nil {
				t.Fatal(err)
			}
			wantC[k] = c.String()
		}
		if diff := cmp.Diff(wantC, got); diff != "" {
			t.Errorf("members of %q (-encoding/json +scanner):\n%s", b, diff)
		}
	})
}

// FuzzValidJSON: validJSON agrees with encoding/json.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,-0.5e+3,true,false,null,"\u00e9\n"]}`, `[`, `"\x"`, `01`, `-`, `1.`, `{"a" 1}`, ` [ ] `, `{}x`, "\"\x01\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, want %v", b, got, want)
		}
	})
}

// FuzzScanHead: the head scan, which checks the object as it reads it,
// accepts exactly the valid JSON objects, as the validJSON pass it
// replaced on every streamed event did (and json.Valid does).
func FuzzScanHead(f *testing.F) {
	for _, s := range []string{`{"id":"x","choices":[{"delta":{}}],"usage":null}`, `{}`, ` { } `, `{,"a":1}`, `{"a":1,}`, `{"a":1 "b":2}`,
		`{"a":1}x`, `{"a":1}}`, `{"a":"\x"}`, `{"a\x":1}`, `[1]`, `{"a":01}`, "{\"a\":\"\x01\"}", `{"a":{"b":[1,{"c":null}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		wantObject := json.Valid(b) && json.Unmarshal(b, &v) == nil
		if _, isMap := v.(map[string]any); !isMap {
			wantObject = false
		}
		if _, ok := scanHead(b); ok != wantObject {
			t.Fatalf("scanHead(%q) ok = %v, want %v", b, ok, wantObject)
		}
	})
}

// TestStringEndAroundTheShortLoop: stringEnd finds a string's end whether
// it falls in the byte-by-byte part or after it, with escapes on either
// side of the hand-over; as a plain scan does.
func TestStringEndAroundTheShortLoop(t *testing.T) {
	plain := func(b []byte, i int) int {
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	}
	for n := range 3 * shortString {
		for esc := -1; esc < n; esc++ {
			for _, escaped := range []byte{'"', '\\', 'n'} {
				body := bytes.Repeat([]byte{'a'}, n)
				if esc >= 0 {
					body = slices.Concat(body[:esc], []byte{'\\', escaped}, body[esc:])
				}
				for _, tail := range []string{`"`, `","b":1`, ``, `\`} {
					b := slices.Concat([]byte(`x"`), body, []byte(tail))
					if got, want := stringEnd(b, 1), plain(b, 1); got != want {
						t.Fatalf("stringEnd(%q) = %d, want %d", b, got, want)
					}
				}
			}
		}
	}
}
