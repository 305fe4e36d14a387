package translator

import (
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestTargetOutputLimit(t *testing.T) {
	t.Parallel()
	m := &policy.Model{ContextWindow: 1000, MaxOutputTokens: 600, DefaultMaxTokens: 200}
	tests := []struct {
		name      string
		fitPrompt int
		requested int
		want      int
	}{
		{"not fitted: the model's limit, whatever the prompt", 0, 900, 600},
		{"not fitted, no cap: the model's default", 0, 0, 200},
		{"fitted: the room the window leaves", 700, 500, 300},
		{"fitted, the cap within the room: the cap", 100, 500, 500},
		{"fitted, no cap: the default, within the room", 700, 0, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := (Target{Model: m, FitPrompt: tt.fitPrompt}).OutputLimit(tt.requested); got != tt.want {
				t.Errorf("OutputLimit(%d) with FitPrompt %d = %d, want %d", tt.requested, tt.fitPrompt, got, tt.want)
			}
		})
	}
}
