package manage

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestGateVerdicts(t *testing.T) {
	keyed := &policy.Gateway{HasAdminKey: true, AdminKeyHash: sha256.Sum256([]byte("sk-admin"))}
	tests := []struct {
		name  string
		gw    *policy.Gateway
		token string
		want  Verdict
	}{
		{"the admin key", keyed, "sk-admin", Admitted},
		{"no key", keyed, "", Missing},
		{"a wrong key", keyed, "sk-guess", Invalid},
		{"a policy without an admin key", &policy.Gateway{}, "sk-admin", Disabled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _, _ := NewGate(time.Now).Check(tt.gw, "10.0.0.1", tt.token); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestGateThrottles: past ten failures a minute an address is refused
// before its key is read, the right key included, and told once a
// window; another address is not held, and the next window frees it.
func TestGateThrottles(t *testing.T) {
	gw := &policy.Gateway{HasAdminKey: true, AdminKeyHash: sha256.Sum256([]byte("sk-admin"))}
	now := time.Unix(1_800_000_000, 0)
	g := NewGate(func() time.Time { return now })
	for i := range failuresPerWindow {
		if v, _, _ := g.Check(gw, "a", "sk-guess"); v != Invalid {
			t.Fatalf("guess %d: %v", i, v)
		}
	}
	v, retry, first := g.Check(gw, "a", "sk-admin")
	if v != Throttled || !first || retry != failureWindow {
		t.Fatalf("after ten failures: %v %v first=%v, want throttled for a minute, first", v, retry, first)
	}
	if _, _, first := g.Check(gw, "a", "sk-admin"); first {
		t.Error("the throttling was reported twice in one window")
	}
	if v, _, _ := g.Check(gw, "b", "sk-admin"); v != Admitted {
		t.Errorf("another address: %v", v)
	}
	now = now.Add(failureWindow)
	if v, _, _ := g.Check(gw, "a", "sk-admin"); v != Admitted {
		t.Errorf("a window later: %v", v)
	}
}
