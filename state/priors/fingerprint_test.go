package priors

import (
	"strings"
	"testing"
)

func print1(pieces ...string) uint64 {
	var p Print
	for _, s := range pieces {
		p.Add(s)
	}
	return p.Sum()
}

func TestFingerprint(t *testing.T) {
	long := strings.Repeat("You are the support bot of a shop. ", 40)
	tests := []struct {
		name string
		a, b []string
		same bool
	}{
		{"no system prompt is the fallback domain", nil, []string{""}, true},
		{"digits do not split an app", []string{"You are v2.1.332 of the bot; today is 2026-12-05."}, []string{"You are v3.0.1 of the bot; today is 2027-01-31."}, true},
		{"pieces hash as the whole", []string{"You are ", "a bot."}, []string{"You are a bot."}, true},
		{"only the first bytes count", []string{long + "user: Ann"}, []string{long + "user: Bob"}, true},
		{"other instructions, another domain", []string{"You are a lawyer."}, []string{"You are a doctor."}, false},
		{"a prompt is not the fallback", []string{"x"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := print1(tt.a...), print1(tt.b...)
			if (a == b) != tt.same {
				t.Errorf("fingerprints %x and %x: same = %v, want %v", a, b, a == b, tt.same)
			}
		})
	}
	if print1() != 0 || print1("a") == 0 {
		t.Error("0 must mean no system prompt, and only that")
	}
}

func TestFingerprintAllocates(t *testing.T) {
	s := strings.Repeat("You answer questions about contracts 12. ", 60)
	if n := testing.AllocsPerRun(100, func() { _ = print1(s) }); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// FuzzFingerprintPieces: however a prompt is cut into pieces (a message's
// text parts), its fingerprint is the whole's.
func FuzzFingerprintPieces(f *testing.F) {
	f.Add("You are the 3rd bot of 2026.", uint16(5))
	f.Add(strings.Repeat("ab1", 500), uint16(1000))
	f.Fuzz(func(t *testing.T, s string, cut uint16) {
		i := int(cut) % (len(s) + 1)
		if a, b := print1(s), print1(s[:i], s[i:]); a != b {
			t.Errorf("%q cut at %d: %x, whole %x", s, i, b, a)
		}
	})
}

func BenchmarkFingerprint(b *testing.B) {
	s := strings.Repeat("You are the helpful assistant of Acme Corp, version 12. ", 40)
	b.ReportAllocs()
	for b.Loop() {
		_ = print1(s)
	}
}
