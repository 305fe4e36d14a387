package quota

import (
	"regexp"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		ref     policy.FilterRef
		wantErr string
	}{
		{name: "no arguments", ref: policy.FilterRef{Name: "quota"}},
		{name: "all arguments", ref: policy.FilterRef{Name: "quota", Args: map[string]any{"reservation_ttl": "30m", "store_timeout": "200ms", "budget_refresh": "0s"}}},
		{name: "shorthand", ref: policy.FilterRef{Name: "quota", Shorthand: []string{"fast"}}, wantErr: "no shorthand"},
		{name: "unknown argument", ref: policy.FilterRef{Name: "quota", Args: map[string]any{"budget": 1}}, wantErr: "field budget not found"},
		{name: "not a duration", ref: policy.FilterRef{Name: "quota", Args: map[string]any{"store_timeout": "soon"}}, wantErr: "duration"},
		{name: "ttl too short", ref: policy.FilterRef{Name: "quota", Args: map[string]any{"reservation_ttl": "10s"}}, wantErr: "reservation_ttl must be between 1m and 24h"},
		{name: "timeout too long", ref: policy.FilterRef{Name: "quota", Args: map[string]any{"store_timeout": "2m"}}, wantErr: "store_timeout"},
		{name: "refresh too long", ref: policy.FilterRef{Name: "quota", Args: map[string]any{"budget_refresh": "1h"}}, wantErr: "budget_refresh"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.ref)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !regexp.MustCompile(regexp.QuoteMeta(tc.wantErr)).MatchString(err.Error())):
				t.Errorf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
