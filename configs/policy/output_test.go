package policy_test

import (
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestFitOutput(t *testing.T) {
	t.Parallel()
	m := &policy.Model{ContextWindow: 1000, MaxOutputTokens: 300, DefaultMaxTokens: 200}
	uncapped := &policy.Model{ContextWindow: 1000}
	tests := []struct {
		name      string
		m         *policy.Model
		requested int
		prompt    int
		want      int
	}{
		{"the cap fits: kept", m, 100, 500, 100},
		{"the cap does not fit: the room", m, 300, 800, 200},
		{"no cap: the model's default, when it fits", m, 0, 500, 200},
		{"no cap: the room, when the default does not fit", m, 0, 900, 100},
		{"above the model's maximum: the maximum", m, 5000, 100, 300},
		{"no cap from anyone: the room", uncapped, 0, 400, 600},
		{"a prompt that fills the window: nothing", m, 100, 1000, 0},
		{"a prompt past the window: nothing", m, 100, 1200, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.m.FitOutput(tt.requested, tt.prompt); got != tt.want {
				t.Errorf("FitOutput(%d, %d) = %d, want %d", tt.requested, tt.prompt, got, tt.want)
			}
		})
	}
}
