package console

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestVendoredFiles: every vendored file is the one scripts/console-vendor
// fetched and checked, byte for byte, and every one it lists is served.
func TestVendoredFiles(t *testing.T) {
	list, err := web.ReadFile("web/static/vendor/VERSIONS.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(list), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 4 {
			t.Fatalf("VERSIONS.txt line %q: want file, package, version, sha256", line)
		}
		n++
		a, ok := assets()["vendor/"+f[0]]
		if !ok {
			t.Errorf("%s (%s %s) is not served", f[0], f[1], f[2])
			continue
		}
		if sum := sha256.Sum256(a.body); hex.EncodeToString(sum[:]) != f[3] {
			t.Errorf("%s differs from %s %s as scripts/console-vendor fetched it", f[0], f[1], f[2])
		}
	}
	if n == 0 {
		t.Error("VERSIONS.txt lists no file")
	}
}
