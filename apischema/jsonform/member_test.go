package jsonform

import (
	"encoding/json"
	"testing"
)

func TestReplaceMember(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"compact", `{"model":"a","max_tokens":5}`, `{"model":"X","max_tokens":5}`, false},
		{"spacing kept", "{ \"max_tokens\" : 5 ,\n \"model\" :  \"a\" }", "{ \"max_tokens\" : 5 ,\n \"model\" :  \"X\" }", false},
		{"nested model untouched", `{"metadata":{"model":"a"},"model":"b"}`, `{"metadata":{"model":"a"},"model":"X"}`, false},
		{"every duplicate replaced", `{"model":"a","model":"b"}`, `{"model":"X","model":"X"}`, false},
		{"non-string value replaced", `{"model":7}`, `{"model":"X"}`, false},
		{"no model", `{"messages":[]}`, `{"messages":[]}`, false},
		{"not an object", `["model"]`, "", true},
		{"torn", `{"model":"a"`, "", true},
		{"two documents", `{"model":"a"}{}`, "", true},
		{"trailing garbage", `{"model":"a"} x`, "", true},
	}
	for _, tt := range tests {
		got, err := ReplaceMember([]byte(tt.in), "model", `"X"`)
		if (err != nil) != tt.wantErr || string(got) != tt.want {
			t.Errorf("%s: got %q, %v; want %q, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSetMember(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"replaced where it is", `{"cap":9,"model":"a"}`, `{"cap":5,"model":"a"}`, false},
		{"added last", `{"model":"a"}`, `{"model":"a","cap":5}`, false},
		{"added last, spacing kept", "{ \"model\": \"a\" }\n", "{ \"model\": \"a\" ,\"cap\":5}\n", false},
		{"added to an empty object", `{ }`, `{ "cap":5}`, false},
		{"not an object", `[]`, "", true},
	}
	for _, tt := range tests {
		got, err := SetMember([]byte(tt.in), "cap", `5`)
		if (err != nil) != tt.wantErr || string(got) != tt.want {
			t.Errorf("%s: got %q, %v; want %q, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestMember(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantFound      bool
		wantErr        bool
	}{
		{"an object", `{"model":"a","metadata":{"team":"x"}}`, `{"team":"x"}`, true, false},
		{"spacing inside kept", `{"metadata" : { "a" : "b" } }`, `{ "a" : "b" }`, true, false},
		{"the last of duplicates", `{"metadata":1,"metadata":2}`, `2`, true, false},
		{"nested members are not top-level", `{"x":{"metadata":1}}`, ``, false, false},
		{"none", `{}`, ``, false, false},
		{"not an object", `[1]`, ``, false, true},
	}
	for _, tt := range tests {
		got, found, err := Member([]byte(tt.in), "metadata")
		if (err != nil) != tt.wantErr || found != tt.wantFound || string(got) != tt.want {
			t.Errorf("%s: got %q, %v, %v; want %q, %v, error %v", tt.name, got, found, err, tt.want, tt.wantFound, tt.wantErr)
		}
	}
}

func TestRemoveMember(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"first", `{"metadata":{"a":"b"},"model":"m","n":1}`, `{"model":"m","n":1}`, false},
		{"middle", `{"model":"m","metadata":{},"n":1}`, `{"model":"m","n":1}`, false},
		{"last", `{"model":"m","metadata":{}}`, `{"model":"m"}`, false},
		{"the only one", ` { "metadata" : {} } `, ` { } `, false},
		{"every duplicate", `{"metadata":1,"x":2,"metadata":3}`, `{"x":2}`, false},
		{"members kept byte for byte", "{\"model\" :  \"m\",\n \"metadata\":{}, \"messages\" : [ 1 ]\n}", "{\"model\" :  \"m\",\"messages\" : [ 1 ]\n}", false},
		{"a key with an escaped quote", `{"a\"b":1,"metadata":2}`, `{"a\"b":1}`, false},
		{"none", `{"model":"m"}`, `{"model":"m"}`, false},
		{"nested left alone", `{"x":{"metadata":1}}`, `{"x":{"metadata":1}}`, false},
		{"torn", `{"metadata":1`, ``, true},
	}
	for _, tt := range tests {
		got, err := RemoveMember([]byte(tt.in), "metadata")
		if (err != nil) != tt.wantErr || string(got) != tt.want {
			t.Errorf("%s: got %q, %v; want %q, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

// FuzzRemoveMember: whatever object comes in, what comes out is an
// object with every member but the removed one, each as it was.
func FuzzRemoveMember(f *testing.F) {
	for _, s := range []string{`{"metadata":{"a":"b"},"model":"m"}`, `{"a\"b":1,"metadata":2,"c":[1,{"metadata":3}]}`, ` { } `, `{"metadata":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var before map[string]json.RawMessage
		if json.Unmarshal([]byte(in), &before) != nil || before == nil {
			return
		}
		got, err := RemoveMember([]byte(in), "metadata")
		if err != nil {
			t.Fatalf("RemoveMember(%q): %v, of an object encoding/json reads", in, err)
		}
		var after map[string]json.RawMessage
		if err := json.Unmarshal(got, &after); err != nil {
			t.Fatalf("RemoveMember(%q) = %q, not an object: %v", in, got, err)
		}
		delete(before, "metadata")
		if len(after) != len(before) {
			t.Fatalf("RemoveMember(%q) = %q: %d members, want %d", in, got, len(after), len(before))
		}
		for k, v := range before {
			if string(after[k]) != string(v) {
				t.Fatalf("RemoveMember(%q) = %q: member %q is %s, want %s", in, got, k, after[k], v)
			}
		}
	})
}
