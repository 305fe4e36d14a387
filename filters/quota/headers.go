package quota

import (
	"strconv"
	"time"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// rateHeaders are the x-ratelimit-* headers OpenAI sends, for the tightest
// of the caller's request limits and of its token limits.
type rateHeaders struct {
	requests, tokens tightest
}

// tightest keeps the limit with the least remaining.
type tightest struct {
	set              bool
	limit, remaining int64
	reset            time.Duration
}

func (t *tightest) observe(limit, remaining int64, reset time.Duration) {
	if !t.set || remaining < t.remaining || (remaining == t.remaining && limit < t.limit) {
		*t = tightest{set: true, limit: limit, remaining: remaining, reset: reset}
	}
}

func (h *rateHeaders) observeWindows(states []store.WindowState, kinds []charge) {
	for i, st := range states {
		if kinds[i].tokens {
			h.tokens.observe(st.Limit, st.Remaining, st.ResetIn)
		} else {
			h.requests.observe(st.Limit, st.Remaining, st.ResetIn)
		}
	}
}

// list returns the headers for the limits that apply; a kind with no limit
// gets none.
func (h *rateHeaders) list() []filters.Header {
	var out []filters.Header
	add := func(kind string, t tightest) {
		if !t.set {
			return
		}
		out = append(out,
			filters.Header{Key: "x-ratelimit-limit-" + kind, Value: strconv.FormatInt(t.limit, 10)},
			filters.Header{Key: "x-ratelimit-remaining-" + kind, Value: strconv.FormatInt(t.remaining, 10)},
			filters.Header{Key: "x-ratelimit-reset-" + kind, Value: t.reset.Round(time.Millisecond).String()})
	}
	add("requests", h.requests)
	add("tokens", h.tokens)
	return out
}
