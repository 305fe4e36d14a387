package quota

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// TestReadme keeps README.md true: its YAML blocks load together as one
// policy whose routes build, quota's arguments included, and it has the
// sections every filter README has.
func TestReadme(t *testing.T) {
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, section := range []string{"## Name", "## Description", "## Config", "## Examples", "## Metrics"} {
		if !regexp.MustCompile(`(?m)^` + section + `$`).Match(doc) {
			t.Errorf("README.md has no %q section", section)
		}
	}
	var files []policy.File
	for i, b := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1) {
		files = append(files, policy.File{Name: "README.md block " + strconv.Itoa(i+1), Data: b[1]})
	}
	if len(files) != 2 {
		t.Fatalf("README.md has %d yaml blocks, want 2", len(files))
	}
	p, err := policy.Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := filters.Build(filters.Deps{Policy: p}); err != nil {
		t.Fatal(err)
	}
	got, err := parse(p.Routes[0].Filters[2])
	if err != nil || got != DefaultConfig() {
		t.Errorf("the README's quota args: %+v, %v; want the defaults they show", got, err)
	}
}

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
