package jsonform

import "testing"

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
