package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/stack"
)

func containsSecret(s, secret string) bool { return secret != "" && strings.Contains(s, secret) }

// defaultOptions are the options of a private stack like the shared one.
func defaultOptions() stack.Options { return stack.Options{} }

// withLocalRateLimit are the options of a private stack like the shared
// one whose gateway.yaml has limit (a YAML flow mapping) as its
// local_rate_limit: Envoy's token buckets, small enough to meet.
func withLocalRateLimit(t *testing.T, limit string) stack.Options {
	t.Helper()
	o := defaultOptions()
	o.Overlay = map[string]string{"gateway.yaml": localGatewayWith(t, regexp.MustCompile(`(?m)^  local_rate_limit: .*$`), "  local_rate_limit: "+limit)}
	return o
}

// localGateway is configs/local/gateway.yaml, for a test that overlays a
// variant of it.
func localGateway(t *testing.T) string {
	t.Helper()
	root, err := stack.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	gw, err := os.ReadFile(filepath.Join(root, "configs", "local", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(gw)
}

// localGatewayWith is configs/local/gateway.yaml with what re matches
// replaced by repl; the test fails if nothing matched.
func localGatewayWith(t *testing.T, re *regexp.Regexp, repl string) string {
	t.Helper()
	gw := localGateway(t)
	out := re.ReplaceAllString(gw, repl)
	if out == gw {
		t.Fatalf("configs/local/gateway.yaml has nothing matching %s to replace", re)
	}
	return out
}
