package usage_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	_ "github.com/switchyard/switchyard/filters/all"
)

// TestReadme keeps README.md true: its YAML blocks load together as one
// policy whose routes build, and it has the sections every filter README
// has.
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
	chains, err := filters.Build(filters.Deps{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if got := chains["usage"].Names(); len(got) != 2 || got[1] != "usage_report" {
		t.Errorf("the usage route's chain is %v", got)
	}
	if !p.Tenants[0].CapturePrompts {
		t.Error("the README's tenant does not capture prompts")
	}
}
