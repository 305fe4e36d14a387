package xdsapp

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCheckWarnsOfRetiredModels: `make check-config` (xds check) accepts
// a policy that names a model its vendor retired, and says so with the
// file and line.
func TestCheckWarnsOfRetiredModels(t *testing.T) {
	var out, errs bytes.Buffer
	if err := Run(context.Background(), []string{"check", "-config", "../../configs/local"}, &out, &errs); err != nil {
		t.Fatalf("check: %v\n%s", err, errs.String())
	}
	for _, want := range []string{
		"policy ../../configs/local is valid",
		"warning: ../../configs/local/models.yaml:",
		"models[claude-3-5-sonnet]: claude-3-5-sonnet was retired by its vendor on 2025-10-22 (successor: claude-sonnet-5-5)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "claude-sonnet-5-5 was") {
		t.Errorf("a current model warned about: %s", out.String())
	}
}
