package policy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/configs/policy"
)

func TestHedgeCompiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, hedge string
		want        *policy.Hedge
	}{
		{name: "none", hedge: ""},
		{name: "fixed delay", hedge: ", hedge: {after: 800ms, max: 1}", want: &policy.Hedge{After: 800 * time.Millisecond}},
		{name: "from the p95", hedge: ", hedge: {after: p95, max: 1}", want: &policy.Hedge{P95: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			y := "routes: [{name: chat, path: /v1/chat/completions, api: chat_completions" + tt.hedge + "}]\n"
			p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(y)}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, p.Routes[0].Hedge); diff != "" {
				t.Errorf("hedge (-want +got):\n%s", diff)
			}
		})
	}
}
