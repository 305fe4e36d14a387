package e2e

import (
	"strings"

	"github.com/switchyard/switchyard/e2e/harness"
)

func containsSecret(s, secret string) bool { return secret != "" && strings.Contains(s, secret) }

// defaultOptions are the options of a private stack like the shared one.
func defaultOptions() harness.Options { return harness.Options{} }
