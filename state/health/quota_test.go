package health

import (
	"net/http"
	"testing"
)

func TestQuotaFromHeaders(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		want    float64
	}{
		{name: "none", want: -1},
		{
			name: "openai requests only",
			headers: map[string]string{
				"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "45",
			},
			want: 0.75,
		},
		{
			name: "openai tokens more constrained than requests",
			headers: map[string]string{
				"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "59",
				"x-ratelimit-limit-tokens": "150000", "x-ratelimit-remaining-tokens": "15000",
			},
			want: 0.1,
		},
		{
			name: "openai azure sends -1",
			headers: map[string]string{
				"x-ratelimit-limit-requests": "-1", "x-ratelimit-remaining-requests": "-1",
				"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "500",
			},
			want: 0.5,
		},
		{
			name: "anthropic all four pairs, output tokens lowest",
			headers: map[string]string{
				"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
				"anthropic-ratelimit-tokens-limit": "100000", "anthropic-ratelimit-tokens-remaining": "90000",
				"anthropic-ratelimit-input-tokens-limit": "80000", "anthropic-ratelimit-input-tokens-remaining": "60000",
				"anthropic-ratelimit-output-tokens-limit": "16000", "anthropic-ratelimit-output-tokens-remaining": "2000",
			},
			want: 0.125,
		},
		{
			name: "anthropic input tokens exhausted",
			headers: map[string]string{
				"anthropic-ratelimit-input-tokens-limit": "80000", "anthropic-ratelimit-input-tokens-remaining": "0",
			},
			want: 0,
		},
		{
			name:    "remaining without limit",
			headers: map[string]string{"x-ratelimit-remaining-requests": "10"},
			want:    -1,
		},
		{
			name:    "zero limit",
			headers: map[string]string{"x-ratelimit-limit-requests": "0", "x-ratelimit-remaining-requests": "0"},
			want:    -1,
		},
		{
			name:    "garbage",
			headers: map[string]string{"x-ratelimit-limit-requests": "sixty", "x-ratelimit-remaining-requests": "1"},
			want:    -1,
		},
		{
			name:    "remaining above limit is full",
			headers: map[string]string{"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "12"},
			want:    1,
		},
		{
			name:    "surrounding spaces",
			headers: map[string]string{"x-ratelimit-limit-requests": " 100 ", "x-ratelimit-remaining-requests": " 4"},
			want:    0.04,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := QuotaFromHeaders(h.Get); got != tt.want {
				t.Errorf("QuotaFromHeaders() = %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzQuotaFromHeaders(f *testing.F) {
	f.Add("60", "45", "150000", "15000")
	f.Add("-1", "-1", "0", "0")
	f.Add("1e309", "NaN", "Inf", "0x10")
	f.Fuzz(func(t *testing.T, limitReq, remReq, limitTok, remTok string) {
		h := map[string]string{
			"x-ratelimit-limit-requests": limitReq, "x-ratelimit-remaining-requests": remReq,
			"anthropic-ratelimit-tokens-limit": limitTok, "anthropic-ratelimit-tokens-remaining": remTok,
		}
		q := QuotaFromHeaders(func(k string) string { return h[k] })
		if q != -1 && (q < 0 || q > 1) {
			t.Errorf("QuotaFromHeaders() = %v, want -1 or a fraction in [0, 1]", q)
		}
	})
}
