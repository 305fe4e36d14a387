package extprocapp

import (
	"fmt"
	"os"
	"strings"

	"github.com/switchyard/switchyard/configs/policy"
)

// secrets resolves provider key references from the environment or files.
// Errors name the reference, never the value.
type secrets struct{}

func (secrets) Resolve(ref policy.SecretRef) (string, error) {
	if ref.Env != "" {
		return os.Getenv(ref.Env), nil
	}
	b, err := os.ReadFile(ref.File)
	if err != nil {
		return "", fmt.Errorf("reading key file %s: %w", ref.File, err)
	}
	return strings.TrimSpace(string(b)), nil
}
