package health

import (
	"math"
	"strconv"
	"strings"
)

// quotaHeaders pairs each provider's remaining and limit headers. OpenAI
// sends requests and tokens; Anthropic sends requests, tokens and the
// input/output token split (llm-wire-formats.md §1.8, §2.8).
var quotaHeaders = [][2]string{
	{"x-ratelimit-remaining-requests", "x-ratelimit-limit-requests"},
	{"x-ratelimit-remaining-tokens", "x-ratelimit-limit-tokens"},
	{"anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-limit"},
	{"anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-limit"},
	{"anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-limit"},
	{"anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-limit"},
}

// QuotaFromHeaders returns the remaining provider quota, as a fraction 0..1,
// from the rate-limit headers of a response: the smallest remaining/limit of
// every pair present, since the most constrained budget is the one that
// runs out. It returns -1 when no usable pair is present. Pairs with a
// missing, unparsable, negative (Azure sends -1) or zero limit are skipped.
// get looks a header up by its lower-case name.
func QuotaFromHeaders(get func(string) string) float64 {
	q := -1.0
	for _, h := range quotaHeaders {
		remaining, ok := headerNumber(get(h[0]))
		if !ok {
			continue
		}
		limit, ok := headerNumber(get(h[1]))
		if !ok || limit == 0 {
			continue
		}
		f := min(remaining/limit, 1)
		if q < 0 || f < q {
			q = f
		}
	}
	return q
}

func headerNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		// Most answers carry none of these: no parse, and no error
		// allocated for it, on every request.
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
