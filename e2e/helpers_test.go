package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/e2e/harness"
)

func containsSecret(s, secret string) bool { return secret != "" && strings.Contains(s, secret) }

// defaultOptions are the options of a private stack like the shared one.
func defaultOptions() harness.Options { return harness.Options{} }

// withLocalRateLimit are the options of a private stack like the shared
// one whose gateway.yaml has limit (a YAML flow mapping) as its
// local_rate_limit: Envoy's token buckets, small enough to meet.
func withLocalRateLimit(t *testing.T, limit string) harness.Options {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	gw, err := os.ReadFile(filepath.Join(root, "configs", "local", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	small := regexp.MustCompile(`(?m)^  local_rate_limit: .*$`).ReplaceAllString(string(gw), "  local_rate_limit: "+limit)
	if small == string(gw) {
		t.Fatal("configs/local/gateway.yaml has no local_rate_limit line to replace")
	}
	o := defaultOptions()
	o.Overlay = map[string]string{"gateway.yaml": small}
	return o
}
