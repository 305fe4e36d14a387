package policy_test

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestTagProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key, value string
		wantErr          string
	}{
		{"plain", "team", "search", ""},
		{"dots, dashes, digits", "cost-center.v2", "4711", ""},
		{"value with spaces, equals and non-ASCII", "project", "Zürich = 2", ""},
		{"longest value", "k", strings.Repeat("v", policy.MaxTagValueBytes), ""},
		{"empty key", "", "v", "tag key"},
		{"key with a space", "cost center", "v", "tag key"},
		{"key from a dash", "-team", "v", "tag key"},
		{"key too long", strings.Repeat("k", 65), "v", "tag key"},
		{"empty value", "team", "", "value of 1 to"},
		{"value too long", "team", strings.Repeat("v", policy.MaxTagValueBytes+1), "value of 1 to"},
		{"comma", "team", "a,b", "commas"},
		{"control character", "team", "a\nb", "control"},
		{"invalid UTF-8", "team", "a\xffb", "text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := policy.TagProblem(tt.key, tt.value)
			if (got == "") != (tt.wantErr == "") || !strings.Contains(got, tt.wantErr) {
				t.Errorf("TagProblem(%q, %q) = %q, want %q", tt.key, tt.value, got, tt.wantErr)
			}
		})
	}
}

func TestSessionProblem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, id, wantErr string
	}{
		{"a UUID", "d9194fc7-8693-41a9-87d3-22c2adba20dc", ""},
		{"punctuation", "run:42/step_7", ""},
		{"empty", "", "1 to"},
		{"too long", strings.Repeat("s", policy.MaxSessionBytes+1), "1 to"},
		{"a space", "a b", "printable"},
		{"non-ASCII", "sessión", "printable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := policy.SessionProblem(tt.id)
			if (got == "") != (tt.wantErr == "") || !strings.Contains(got, tt.wantErr) {
				t.Errorf("SessionProblem(%q) = %q, want %q", tt.id, got, tt.wantErr)
			}
		})
	}
}
