package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/switchyard/switchyard/"

// drivers are the database and Redis clients; only state/ and the
// ext_proc process's wiring may link them.
var drivers = []string{"github.com/redis/go-redis", "github.com/jackc/pgx", "modernc.org/sqlite", "github.com/lib/pq", "github.com/mattn/go-sqlite3"}

// extProcProto is the ext_proc wire API: only the server speaks it.
const extProcProto = "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

// filterOf names the filter a package belongs to (filters/<name>/...), or
// "" for a package outside the filters (and for the chain itself,
// filters/, and filters/all, which links every filter on purpose).
func filterOf(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "filters/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	if name == "all" || isDeclaration(pkg) {
		return ""
	}
	return name
}

// isDeclaration reports whether a package only declares filters
// (filters/filterspec): the vocabulary, the list of declarations, or one
// filter's declaration (filters/<name>/<name>spec). Declarations link no
// behaviour, so the policy's validation (configs, xds) may link them.
func isDeclaration(pkg string) bool {
	if pkg == "filters/filterspec" || pkg == "filters/specs" {
		return true
	}
	parts := strings.Split(pkg, "/")
	return len(parts) == 3 && parts[0] == "filters" && parts[2] == parts[1]+"spec"
}

func under(pkg string, roots ...string) bool {
	for _, r := range roots {
		if pkg == r || strings.HasPrefix(pkg, r+"/") {
			return true
		}
	}
	return false
}

// violations checks a package graph (module-relative package → its
// imports, module-relative for the module's own, full paths for others)
// against the rules, and says what breaks each.
func violations(graph map[string][]string) []string {
	var out []string
	for pkg, imps := range graph {
		for _, imp := range imps {
			if f, g := filterOf(pkg), filterOf(imp); f != "" && g != "" && f != g {
				out = append(out, pkg+" imports "+imp+": a filter never imports a sibling filter; move what both need below the filters (state/, apischema/, translator/, redact/)")
			}
			if isDeclaration(pkg) && under(imp, "filters") && !isDeclaration(imp) {
				out = append(out, pkg+" imports "+imp+": a filter's declaration links no filter's behaviour")
			}
			if under(pkg, "state", "translator", "apischema") && under(imp, "filters", "extproc") {
				out = append(out, pkg+" imports "+imp+": the services and wire types below the filters never import a filter or the ext_proc server")
			}
			if under(pkg, "cmd") && under(imp, "e2e") {
				out = append(out, pkg+" imports "+imp+": a command never imports the tests' code; share it through a package of its own (stack/)")
			}
			if imp == extProcProto && !under(pkg, "extproc/server", "extproc/extprocapp") {
				out = append(out, pkg+" imports the ext_proc protobufs: only extproc/server (and its wiring) speaks them")
			}
		}
	}
	for pkg := range graph {
		if !under(pkg, "configs", "xds") {
			continue
		}
		for _, dep := range closure(graph, pkg) {
			switch {
			case under(dep, "filters") && !isDeclaration(dep):
				out = append(out, pkg+" depends on "+dep+": configs and xds never link a filter, only filters' declarations")
			case slices.ContainsFunc(drivers, func(d string) bool { return under(dep, d) }):
				out = append(out, pkg+" depends on "+dep+": configs and xds never link a database or Redis driver")
			}
		}
	}
	slices.Sort(out)
	return out
}

// closure lists every package pkg depends on, directly or not, as far as
// the graph knows them.
func closure(graph map[string][]string, pkg string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, imp := range graph[p] {
			if !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(pkg)
	deps := make([]string, 0, len(seen))
	for d := range seen {
		deps = append(deps, d)
	}
	slices.Sort(deps)
	return deps
}

// TestRulesCatchEachViolation: every kind of wall the layout review found
// broken is caught, on small graphs.
func TestRulesCatchEachViolation(t *testing.T) {
	tests := []struct {
		name  string
		graph map[string][]string
		want  string // a substring of the one violation expected; "" for none
	}{
		{name: "a filter imports a sibling's package",
			graph: map[string][]string{"filters/auth": {"filters/quota/store"}},
			want:  "filters/auth imports filters/quota/store"},
		{name: "a filter imports a sibling filter",
			graph: map[string][]string{"filters/usage": {"filters/router"}},
			want:  "filters/usage imports filters/router"},
		{name: "configs imports a filter's package",
			graph: map[string][]string{"configs/policy": {"filters/router/health"}},
			want:  "configs/policy depends on filters/router/health"},
		{name: "xds links a driver through a service",
			graph: map[string][]string{"xds/xdsapp": {"filters"}, "filters": {"state/store"}, "state/store": {"github.com/redis/go-redis/v9"}},
			want:  "xds/xdsapp depends on filters"},
		{name: "xds links a database driver",
			graph: map[string][]string{"xds/xdsapp": {"state/ledger"}, "state/ledger": {"github.com/jackc/pgx/v5"}},
			want:  "xds/xdsapp depends on github.com/jackc/pgx/v5"},
		{name: "a filter speaks ext_proc",
			graph: map[string][]string{"filters/router": {extProcProto}},
			want:  "filters/router imports the ext_proc protobufs"},
		{name: "a service imports a filter",
			graph: map[string][]string{"state/health": {"filters/router"}},
			want:  "state/health imports filters/router"},
		{name: "a translator imports the chain",
			graph: map[string][]string{"translator/gemini": {"filters"}},
			want:  "translator/gemini imports filters"},
		{name: "a wire type imports the ext_proc server",
			graph: map[string][]string{"apischema/openai": {"extproc/server"}},
			want:  "apischema/openai imports extproc/server"},
		{name: "a command imports the e2e harness",
			graph: map[string][]string{"cmd/devstack": {"e2e/harness"}},
			want:  "cmd/devstack imports e2e/harness"},
		{name: "a command runs the stack",
			graph: map[string][]string{"cmd/devstack": {"stack", "providersim"}, "stack": {"providersim", "configs/policy"}}},
		{name: "a declaration imports behaviour",
			graph: map[string][]string{"filters/quota/quotaspec": {"filters"}},
			want:  "filters/quota/quotaspec imports filters"},
		{name: "xds links declarations",
			graph: map[string][]string{"xds/xdsapp": {"configs/policy"}, "configs/policy": {"filters/specs"}, "filters/specs": {"filters/quota/quotaspec", "filters/filterspec"}, "filters/quota/quotaspec": {"filters/filterspec"}}},
		{name: "configs links a filter through a declaration",
			graph: map[string][]string{"configs/policy": {"filters/specs"}, "filters/specs": {"filters/quota"}},
			want:  "configs/policy depends on filters/quota"},
		{name: "a filter uses services and its own subpackage",
			graph: map[string][]string{"filters/router": {"filters/router/complexity", "state/health", "filters"}, "filters/all": {"filters/router", "filters/auth"}}},
		{name: "the server speaks ext_proc",
			graph: map[string][]string{"extproc/server": {extProcProto}, "extproc/extprocapp": {extProcProto, "github.com/redis/go-redis/v9"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := violations(tt.graph)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("got %q, want none", got)
			case tt.want != "" && (len(got) == 0 || !strings.Contains(got[0], tt.want)):
				t.Errorf("got %q, want one containing %q", got, tt.want)
			}
		})
	}
}

// TestTreeKeepsTheRules reads the imports of every non-test Go file of the
// module and checks the rules on the real graph.
func TestTreeKeepsTheRules(t *testing.T) {
	graph, err := moduleGraph("..")
	if err != nil {
		t.Fatal(err)
	}
	if len(graph["extproc/server"]) == 0 || len(graph["xds/xdsapp"]) == 0 {
		t.Fatalf("the graph misses known packages: %d packages read", len(graph))
	}
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// moduleGraph parses the import clauses of the module's packages under
// root (tests excluded: a test may reach across walls to check them).
func moduleGraph(root string) (map[string][]string, error) {
	graph := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			imp = strings.TrimPrefix(imp, module)
			if !slices.Contains(graph[pkg], imp) {
				graph[pkg] = append(graph[pkg], imp)
			}
		}
		return nil
	})
	if _, statErr := os.Stat(filepath.Join(root, "go.mod")); statErr != nil {
		return nil, statErr
	}
	return graph, err
}
