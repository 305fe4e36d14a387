package quotaspec

import (
	"regexp"
	"testing"

	"github.com/switchyard/switchyard/filters/filterspec"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		ref     filterspec.Ref
		wantErr string
	}{
		{name: "no arguments", ref: filterspec.Ref{Name: "quota"}},
		{name: "all arguments", ref: filterspec.Ref{Name: "quota", Args: map[string]any{"reservation_ttl": "30m", "store_timeout": "200ms", "budget_refresh": "0s"}}},
		{name: "shorthand", ref: filterspec.Ref{Name: "quota", Shorthand: []string{"fast"}}, wantErr: "no shorthand"},
		{name: "unknown argument", ref: filterspec.Ref{Name: "quota", Args: map[string]any{"budget": 1}}, wantErr: "unknown field budget"},
		{name: "not a duration", ref: filterspec.Ref{Name: "quota", Args: map[string]any{"store_timeout": "soon"}}, wantErr: "duration"},
		{name: "ttl too short", ref: filterspec.Ref{Name: "quota", Args: map[string]any{"reservation_ttl": "10s"}}, wantErr: "reservation_ttl must be between 1m and 24h"},
		{name: "timeout too long", ref: filterspec.Ref{Name: "quota", Args: map[string]any{"store_timeout": "2m"}}, wantErr: "store_timeout"},
		{name: "refresh too long", ref: filterspec.Ref{Name: "quota", Args: map[string]any{"budget_refresh": "1h"}}, wantErr: "budget_refresh"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.ref)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !regexp.MustCompile(regexp.QuoteMeta(tc.wantErr)).MatchString(err.Error())):
				t.Errorf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
