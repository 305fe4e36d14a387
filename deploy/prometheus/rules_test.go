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

// ruleFiles are the rule files prometheus.yml loads.
var ruleFiles = []string{"alerts.yml", "recording.yml"}

// metricName finds the gateway's metric names in a rule file.
var metricName = regexp.MustCompile(`(?:^|[^"\w])((?:switchyard|gen_ai)_[a-z_]+)\b[^=]`)

// TestConfigAndRules: the scrape configuration loads with its rule files,
// the rules are valid, each alert fires on exactly the series of
// alerts_test.yml that should fire it and each recording rule records
// what recording_test.yml says.
func TestConfigAndRules(t *testing.T) {
	promtool(t, "check", "config", "prometheus.yml")
	promtool(t, append([]string{"check", "rules"}, ruleFiles...)...)
	promtool(t, "test", "rules", "alerts_test.yml", "recording_test.yml")
}

// TestRulesWatchRealMetrics: every Switchyard metric a rule reads is one
// the gateway defines, so that a renamed metric cannot leave an alert
// that never fires, or a recorded series that is always empty.
func TestRulesWatchRealMetrics(t *testing.T) {
	for _, f := range ruleFiles {
		t.Run(f, func(t *testing.T) {
			rules, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// Metric names, not labels: a label is quoted (label_replace's
			// arguments) or matched (name="value").
			var names []string
			for _, m := range metricName.FindAllStringSubmatch(string(rules), -1) {
				names = append(names, m[1])
			}
			if len(names) < 3 {
				t.Fatalf("the rules read %d Switchyard metrics", len(names))
			}
			source := gatewaySource(t)
			for _, n := range names {
				// A histogram's series are its name and a suffix.
				n = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")
				if !strings.Contains(source, `"`+n+`"`) {
					t.Errorf("%s reads %s, which no package defines", f, n)
				}
			}
		})
	}
}

// gatewaySource is the Go source of the packages that define metrics.
func gatewaySource(t *testing.T) string {
	t.Helper()
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
	return source.String()
}
