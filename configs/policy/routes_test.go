package policy_test

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

// TestRouteTimeouts: an unset timeout takes its default, and a stream is
// bounded like any answer unless the route says otherwise.
func TestRouteTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		settings            string
		wantAnswer, wantStr time.Duration
	}{
		{"defaults", "", policy.DefaultAnswerTimeout, policy.DefaultAnswerTimeout},
		{"stream bound follows answer_timeout", ", answer_timeout: 2m", 2 * time.Minute, 2 * time.Minute},
		{"stream bound of its own", ", answer_timeout: 2m, stream_timeout: 30m", 2 * time.Minute, 30 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "routes:\n  - {name: chat, path: /v1/chat/completions, api: chat_completions" + tt.settings + "}\n"
			p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(src)}})
			if err != nil {
				t.Fatal(err)
			}
			r := p.Route("/v1/chat/completions")
			if r.AnswerTimeout != tt.wantAnswer || r.StreamTimeout != tt.wantStr {
				t.Errorf("answer_timeout %v, stream_timeout %v; want %v, %v", r.AnswerTimeout, r.StreamTimeout, tt.wantAnswer, tt.wantStr)
			}
		})
	}
}
