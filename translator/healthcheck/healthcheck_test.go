package healthcheck

import (
	"strings"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/translator"
)

// TestEveryKindHasACheck: each provider kind the policy knows has a check
// that lists models, carries the key only in a header and costs no body.
func TestEveryKindHasACheck(t *testing.T) {
	tests := []struct {
		kind     policy.Kind
		wantPath string
	}{
		{policy.KindOpenAI, "/v1/models"},
		{policy.KindAzureOpenAI, "/openai/models?api-version="},
		{policy.KindOpenAICompatible, "/v1/models"},
		{policy.KindAnthropic, "/v1/models"},
		{policy.KindGemini, "/models"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			up, ok := Request(&policy.Provider{Kind: tt.kind}, "sk-secret")
			if !ok {
				t.Fatal("no check")
			}
			if !strings.Contains(up.Path, tt.wantPath) || strings.Contains(up.Path, "sk-secret") || len(up.Body) != 0 {
				t.Errorf("check %q with a %d-byte body, want a bodiless %q without the key", up.Path, len(up.Body), tt.wantPath)
			}
			if !strings.Contains(headerValues(up.Header), "sk-secret") {
				t.Errorf("the key is in no header: %v", up.Header)
			}
		})
	}
	if _, ok := Request(&policy.Provider{Kind: "carrier-pigeon"}, "k"); ok {
		t.Error("an unknown kind has a check")
	}
}

func headerValues(h translator.Headers) string {
	var b strings.Builder
	for _, kv := range h {
		b.WriteString(kv.Value + "\n")
	}
	return b.String()
}
