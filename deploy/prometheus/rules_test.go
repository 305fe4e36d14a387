package prometheus

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: `make deps` installs Debian's prometheus package, which has it")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestConfigAndRules: the scrape configuration loads with its rule files,
// the rules are valid and each alert fires on exactly the series of
// alerts_test.yml that should fire it.
func TestConfigAndRules(t *testing.T) {
	promtool(t, "check", "config", "prometheus.yml")
	promtool(t, "check", "rules", "alerts.yml")
	promtool(t, "test", "rules", "alerts_test.yml")
}

// TestRulesWatchRealMetrics: every Switchyard metric a rule reads is one
// the gateway defines, so that a renamed metric cannot leave an alert
// that never fires.
func TestRulesWatchRealMetrics(t *testing.T) {
	rules, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var source strings.Builder
	for _, dir := range []string{"state", "filters", "extproc"} {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			source.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	names := regexp.MustCompile(`switchyard_[a-z_]+`).FindAllString(string(rules), -1)
	if len(names) < 4 {
		t.Fatalf("the rules read %d Switchyard metrics", len(names))
	}
	for _, n := range names {
		n = strings.TrimSuffix(n, "_bucket")
		if !strings.Contains(source.String(), `"`+n+`"`) {
			t.Errorf("alerts.yml reads %s, which no package defines", n)
		}
	}
}
