package redact

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"visa number", "charge card 4111 1111 1111 1111 please", SensitiveCard},
		{"card with dashes", "4012-8888-8888-1881", SensitiveCard},
		{"digits failing luhn are not a card", "order 1234 5678 9012 3456", ""},
		{"email", "write to ana.silva+work@example.co.uk today", SensitiveEmail},
		{"international phone", "call me at +351 912 345 678", SensitivePhone},
		{"us phone", "(415) 555-2671", SensitivePhone},
		{"ssn", "my SSN is 123-45-6789", SensitiveNationID},
		{"chinese id with valid check digit", "身份证 11010519491231002X", SensitiveNationID},
		{"chinese id with wrong check digit", "11010519491231002", ""},
		{"openai key", "use sk-FAKEfakefakefakefake for it", SensitiveSecret},
		{"aws key", "AKIAIOSFODNN7EXAMPLE", SensitiveSecret},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE", SensitiveSecret},
		{"arithmetic", "what is 1234 * 5678 + 2024?", ""},
		{"year range", "from 1999-2024 prices rose", ""},
		{"plain prose", "Explain how a gateway routes requests.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Detect(tt.in); got != tt.want {
				t.Errorf("Detect(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestScanIsBounded: text beyond MaxScanBytes is taken as sensitive
// without being read; a scan whose context has ended stops with its error;
// a match across a window boundary is found.
func TestScanIsBounded(t *testing.T) {
	long := strings.Repeat("lorem ipsum ", MaxScanBytes/12+1)
	if kind, err := Scan(context.Background(), long); kind != SensitiveUnscanned || err != nil {
		t.Errorf("text of %d bytes: %q, %v; want %q unread", len(long), kind, err, SensitiveUnscanned)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Scan(ctx, strings.Repeat("a", 100<<10)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled scan: %v, want context.Canceled", err)
	}
	across := strings.Repeat("x ", scanWindow/2-8) + " joanna@example.net" // crosses scanWindow
	if kind, err := Scan(context.Background(), across); kind != SensitiveEmail || err != nil {
		t.Errorf("email across a window boundary: %q, %v", kind, err)
	}
	if kind, _ := Scan(context.Background(), strings.Repeat("x ", MaxScanBytes/2-1)); kind != "" {
		t.Errorf("clean text at the bound: %q", kind)
	}
}
