package layout

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutRows reads the README's Layout table: each row's path (its first
// cell, without the trailing slash) and the text of the row.
func layoutRows(readme string) map[string]string {
	_, table, _ := strings.Cut(readme, "\n## Layout\n")
	table, _, _ = strings.Cut(table, "\n#")
	rows := map[string]string{}
	first := regexp.MustCompile("^\\| `([^`]+)` \\|")
	for _, line := range strings.Split(table, "\n") {
		if m := first.FindStringSubmatch(line); m != nil {
			rows[strings.TrimSuffix(m[1], "/")] = line
		}
	}
	return rows
}

// unnamed lists the packages no row names: a package is named by the row
// of its own path, or by the row of the longest path above it that
// mentions what lies below (`sub/` or `sub/pkg/`).
func unnamed(rows map[string]string, pkgs []string) []string {
	var out []string
	for _, pkg := range pkgs {
		if _, ok := rows[pkg]; ok {
			continue
		}
		named := false
		for p := pkg; !named; {
			i := strings.LastIndex(p, "/")
			if i < 0 {
				break
			}
			p = p[:i]
			if row, ok := rows[p]; ok {
				rel := strings.TrimPrefix(pkg, p+"/")
				named = strings.Contains(row, "`"+rel+"/") || strings.Contains(row, "`"+rel+"`") ||
					isDeclaration(pkg) && strings.Contains(row, "`<name>/<name>spec/`")
				break
			}
		}
		if !named {
			out = append(out, pkg)
		}
	}
	return out
}

func TestUnnamedPackages(t *testing.T) {
	rows := map[string]string{
		"filters": "| `filters/` | `auth/`, `router/` (with `router/complexity/`) |",
		"cmd":     "| `cmd/` | `node/` |",
	}
	got := unnamed(rows, []string{"filters", "filters/auth", "filters/router/complexity", "filters/quota", "cmd/node", "cmd/devstack", "stack"})
	want := []string{"filters/quota", "cmd/devstack", "stack"}
	if !slices.Equal(got, want) {
		t.Errorf("unnamed = %q, want %q", got, want)
	}
}

// TestReadmeNamesEveryPackage: the README's Layout table names every
// package of the module, so a new package comes with its line.
func TestReadmeNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := layoutRows(string(b))
	if len(rows) < 10 {
		t.Fatalf("read %d rows of the README's Layout table", len(rows))
	}
	pkgs, err := packageDirs("..")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pkgs)
	for _, pkg := range unnamed(rows, pkgs) {
		t.Errorf("README's Layout table does not name %s/", pkg)
	}
}

// packageDirs lists the directories under root that hold Go files, tests
// included, relative to root (the root itself left out).
func packageDirs(root string) ([]string, error) {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if dir := filepath.Dir(path); strings.HasSuffix(path, ".go") && dir != root {
			rel, err := filepath.Rel(root, dir)
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	pkgs := make([]string, 0, len(seen))
	for p := range seen {
		pkgs = append(pkgs, p)
	}
	return pkgs, err
}
