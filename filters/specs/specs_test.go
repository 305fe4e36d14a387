package specs

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/filters/filterspec"
)

var update = flag.Bool("update", false, "rewrite the filter table of configs/README.md")

// TestShippedFlowHolds: with every filter on a route, each need is met by
// an earlier step in the fixed order.
func TestShippedFlowHolds(t *testing.T) {
	if err := filterspec.CheckFlow(All); err != nil {
		t.Fatal(err)
	}
}

// TestRequiresAreNotFlow: a declared requirement is one the flow does not
// already imply, so requirements and uses are never two truths.
func TestRequiresAreNotFlow(t *testing.T) {
	for _, d := range All {
		flowOnly := *d
		flowOnly.Requires = nil
		implied := filterspec.Missing(&flowOnly, map[string]bool{}, All)
		for _, r := range d.Requires {
			if slices.Contains(implied, r.Filter) {
				t.Errorf("filter %q requires %q, which what it needs already implies", d.Name, r.Filter)
			}
			if _, ok := Named(r.Filter); !ok || r.Why == "" {
				t.Errorf("filter %q requires %q: unknown filter or no reason", d.Name, r.Filter)
			}
		}
	}
}

// TestDeclarations: names are unique, orders distinct, and a filter with
// arguments checks them while one without refuses any.
func TestDeclarations(t *testing.T) {
	names, orders := map[string]bool{}, map[int]string{}
	for _, d := range All {
		if names[d.Name] {
			t.Errorf("filter %q declared twice", d.Name)
		}
		names[d.Name] = true
		if o, ok := orders[d.Order]; ok {
			t.Errorf("filters %q and %q share order %d", o, d.Name, d.Order)
		}
		orders[d.Order] = d.Name
		if (len(d.Args) > 0) != (d.Check != nil) {
			t.Errorf("filter %q documents %d arguments but its check is set: %v", d.Name, len(d.Args), d.Check != nil)
		}
		if d.Check == nil {
			if err := d.CheckArgs(filterspec.Ref{Name: d.Name, Args: map[string]any{"x": 1}}); err == nil {
				t.Errorf("filter %q takes arguments it does not declare", d.Name)
			}
		}
	}
}

// TestReadmeTable: configs/README.md shows the table the declarations
// make (go test ./filters/specs -update rewrites it).
func TestReadmeTable(t *testing.T) {
	const path = "../../configs/README.md"
	const begin, end = "<!-- filters table: go test ./filters/specs -update -->\n", "<!-- end of filters table -->\n"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no filters table between %q and %q", path, begin, end)
	}
	got, want := doc[i+len(begin):j], Table()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("configs/README.md's filters table is stale; run go test ./filters/specs -update. Want:\n%s", want)
}
