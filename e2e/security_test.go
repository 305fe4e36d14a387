package e2e

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/envoy/contract"
)

// TestExtProcChannelIsOwnerOnly: Envoy reaches ext_proc over a Unix socket
// only their user may open (issue 14, item 7), and requests are served
// over it.
func TestExtProcChannelIsOwnerOnly(t *testing.T) {
	t.Parallel()
	r := shared.Replicas[0]
	fi, err := os.Stat(r.ExtProcSocket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %v, want a socket with 0600", r.ExtProcSocket, fi.Mode())
	}
	resp, err := http.Get(r.EnvoyAdmin + "/clusters")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := contract.ExtProcCluster + "::" + r.ExtProcSocket + "::"; !strings.Contains(string(b), want) {
		t.Fatalf("Envoy's ext_proc cluster is not the socket (want a host line %q):\n%s", want, grepLines(string(b), contract.ExtProcCluster+"::"))
	}
	if code, _, body := post(t, shared, demoKey, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`); code != http.StatusOK {
		t.Fatalf("a request over the socket: %d %s", code, body)
	}
}

// grepLines returns the lines of s that contain sub (a few, for messages).
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && len(out) < 5 {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
