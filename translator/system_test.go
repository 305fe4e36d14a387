package translator

import (
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

func TestLeadingSystem(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		roles []string
		want  int
	}{
		{"none", []string{"user", "system"}, 0},
		{"system and developer before the first turn", []string{"system", "developer", "user", "system"}, 2},
		{"only system messages", []string{"developer", "system"}, 2},
		{"an assistant turn first", []string{"assistant", "system", "user"}, 0},
		{"empty", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msgs := make([]openaiapi.Message, len(tt.roles))
			for i, r := range tt.roles {
				msgs[i].Role = r
			}
			if got := LeadingSystem(msgs); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
