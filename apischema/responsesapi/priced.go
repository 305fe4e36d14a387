package responsesapi

import "strings"

// DefaultMaxToolCalls is the bound a request offering a hosted tool billed
// per use (web search) gets when it sets no max_tool_calls: the budget
// reservation covers that many uses, and OpenAI runs no more.
const DefaultMaxToolCalls = 10

// PricedToolUses is the most uses of hosted tools billed per use that a
// request lets its answer make: its max_tool_calls, or
// DefaultMaxToolCalls when it offers one and sets none; 0 when it offers
// none.
func PricedToolUses(r *Request) int {
	for _, t := range r.Tools {
		if strings.HasPrefix(t.Type, "web_search") {
			if r.MaxToolCalls != nil && *r.MaxToolCalls >= 0 {
				return *r.MaxToolCalls
			}
			return DefaultMaxToolCalls
		}
	}
	return 0
}
