package policy_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

// TestReadmeBlocksLoad loads the YAML blocks of configs/README.md as one
// policy, each block a file, the way CoreDNS checks its READMEs.
func TestReadmeBlocksLoad(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 5 {
		t.Fatalf("found %d YAML blocks", len(blocks))
	}
	var files []policy.File
	for i, b := range blocks {
		files = append(files, policy.File{Name: "README.md block " + strconv.Itoa(i+1), Data: b[1]})
	}
	p, err := policy.Compile(files)
	if err != nil {
		t.Fatalf("the README's policy does not load:\n%v", err)
	}
	if len(p.Routes[0].Routing.Rules) == 0 || p.Tenants[0].Budget.DailyMicros != 50_000_000 {
		t.Errorf("the README's policy lost its rules or budget: %+v", p.Routes[0].Routing)
	}
}
