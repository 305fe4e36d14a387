package redact

import "testing"

func TestMask(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"visa number", "charge card 4111 1111 1111 1111 please", "charge card [card_number] please"},
		{"digits failing luhn stay", "order 1234 5678 9012 3456", "order 1234 5678 9012 3456"},
		{"email", "write to ana.silva+work@example.co.uk today", "write to [email] today"},
		{"international phone", "call me at +351 912 345 678", "call me at [phone]"},
		{"ssn", "my SSN is 123-45-6789", "my SSN is [national_id]"},
		{"chinese id with valid check digit", "身份证 11010519491231002X", "身份证 [national_id]"},
		{"openai key", "use sk-FAKEfakefakefakefake for it", "use [secret] for it"},
		{"private key header", "-----BEGIN RSA PRIVATE KEY-----\nMIIE", "[secret]\nMIIE"},
		{"several kinds at once", "mail a@b.io, card 4012-8888-8888-1881", "mail [email], card [card_number]"},
		{"plain prose", "Explain how a gateway routes requests.", "Explain how a gateway routes requests."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Mask(tt.in)
			if got != tt.want {
				t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if k := Detect(got); k != "" {
				t.Errorf("Mask(%q) = %q still holds %s", tt.in, got, k)
			}
		})
	}
}

func FuzzMaskLeavesNothingToDetect(f *testing.F) {
	for _, s := range []string{"4111 1111 1111 1111", "a@b.io", "+351 912 345 678", "123-45-6789", "sk-FAKEfakefakefakefake", "hello"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if k := Detect(Mask(s)); k != "" {
			t.Errorf("Mask(%q) = %q still holds %s", s, Mask(s), k)
		}
	})
}
