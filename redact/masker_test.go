package redact

import (
	"maps"
	"testing"
)

func TestMasker(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		kinds      []string
		in         []string // texts masked in turn by one masker
		want       []string
		wantCounts map[string]int
	}{
		{"each value its own placeholder, the same value the same one", AllKinds,
			[]string{"mail ana@example.com and bo@example.org", "again ana@example.com, card 4111 1111 1111 1111"},
			[]string{"mail [email_1] and [email_2]", "again [email_1], card [card_number_1]"},
			map[string]int{"email": 3, "card_number": 1}},
		{"only the kinds asked for", []string{SensitiveEmail},
			[]string{"ana@example.com, +351 912 345 678, sk-FAKEfakefakefakefake"},
			[]string{"[email_1], +351 912 345 678, sk-FAKEfakefakefakefake"},
			map[string]int{"email": 1}},
		{"a key before the digits inside it", AllKinds,
			[]string{"key sk-proj-4111111111111111abcdefgh"},
			[]string{"key [secret_1]"},
			map[string]int{"secret": 1}},
		{"nothing to mask", AllKinds, []string{"Explain how a gateway routes requests."},
			[]string{"Explain how a gateway routes requests."}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := NewMasker(tt.kinds)
			for i, in := range tt.in {
				if got := m.Mask(in); got != tt.want[i] {
					t.Errorf("Mask(%q) = %q, want %q", in, got, tt.want[i])
				}
			}
			if !maps.Equal(m.Counts(), tt.wantCounts) {
				t.Errorf("counts %v, want %v", m.Counts(), tt.wantCounts)
			}
		})
	}
}

func TestMaskerRestore(t *testing.T) {
	t.Parallel()
	m := NewMasker(AllKinds)
	m.Mask("write to ana@example.com or call +351 912 345 678")
	tests := []struct{ in, want string }{
		{`{"content":"I wrote to [email_1] and called [phone_1]."}`, `{"content":"I wrote to ana@example.com and called +351 912 345 678."}`},
		{`placeholders it did not make stay: [email_2] [card_number_1] [note]`, `placeholders it did not make stay: [email_2] [card_number_1] [note]`},
		{`"{\"to\":\"[email_1]\"}"`, `"{\"to\":\"ana@example.com\"}"`},
	}
	for _, tt := range tests {
		if got := string(m.Restore([]byte(tt.in))); got != tt.want {
			t.Errorf("Restore(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := string(NewMasker(AllKinds).Restore([]byte("[email_1]"))); got != "[email_1]" {
		t.Errorf("a masker that masked nothing restored %q", got)
	}
}

func TestMaskerPending(t *testing.T) {
	t.Parallel()
	m := NewMasker(AllKinds)
	m.Mask("a@b.io and c@d.io")
	tests := []struct {
		in   string
		want int
	}{
		{"to [", 1},
		{"to [em", 3},
		{"to [email_", 7},
		{"to [email_2", 8},
		{"to [email_1]", 0}, // whole: Restore's
		{"to [email_3", 0},  // no such placeholder
		{"to [note", 0},
		{"to [email_1] done", 0},
		{"no bracket", 0},
	}
	for _, tt := range tests {
		if got := m.Pending([]byte(tt.in)); got != tt.want {
			t.Errorf("Pending(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
