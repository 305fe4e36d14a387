package all_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	_ "github.com/switchyard/switchyard/filters/all"
)

// notFilters are the directories under filters/ that hold no filter.
var notFilters = map[string]bool{"all": true, "openai": true, "filterspec": true, "specs": true}

var (
	yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")
	sections  = []string{"Name", "Description", "Config", "Examples", "Metrics"}
)

// TestReadmes keeps every filter's README.md true: it has the sections a
// filter README has, and its YAML blocks load together as one policy whose
// routes build.
func TestReadmes(t *testing.T) {
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() || notFilters[d.Name()] {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join("..", d.Name(), "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range sections {
				if !regexp.MustCompile(`(?m)^## ` + s + `$`).Match(doc) {
					t.Errorf("README.md has no %q section", s)
				}
			}
			var files []policy.File
			for i, b := range yamlBlock.FindAllSubmatch(doc, -1) {
				files = append(files, policy.File{Name: d.Name() + "/README.md block " + strconv.Itoa(i+1), Data: b[1]})
			}
			if len(files) == 0 {
				t.Fatal("README.md shows no yaml example")
			}
			p, err := policy.Compile(files)
			if err != nil {
				t.Fatal(err)
			}
			chains, err := filters.Build(filters.Deps{Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			if !usesFilter(chains, d.Name()) {
				t.Errorf("no route of the README's example runs the %s filter", d.Name())
			}
		})
	}
}

// usesFilter reports whether a chain runs the filter of package dir: a
// package is named for its filter without underscores (usage_report is
// filters/usagereport).
func usesFilter(chains map[string]*filters.Chain, dir string) bool {
	for _, c := range chains {
		for _, n := range c.Names() {
			if strings.ReplaceAll(n, "_", "") == dir {
				return true
			}
		}
	}
	return false
}
