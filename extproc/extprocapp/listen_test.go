package extprocapp

import (
	"os"
	"regexp"
	"testing"
)

// TestDefaultListenIsTheBootstrapSocket: ext_proc's default is the Unix
// socket envoy/bootstrap.yaml points Envoy at, so a plain start on one host
// needs no TCP port anyone else could reach.
func TestDefaultListenIsTheBootstrapSocket(t *testing.T) {
	c, err := parseFlags(nil, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := os.ReadFile("../../envoy/bootstrap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`pipe: \{path: (\S+)\}`).FindSubmatch(bs)
	if m == nil {
		t.Fatal("envoy/bootstrap.yaml reaches ext_proc over no Unix socket")
	}
	if want := "unix:" + string(m[1]); c.channel.Listen != want {
		t.Errorf("-listen defaults to %q, the bootstrap uses %q", c.channel.Listen, want)
	}
}
