package translate

import (
	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/filters"
)

// LostMicros is what the attempts that lost a race may have cost (a
// hedge's, or a hybrid answer's picked first: filters.CauseHedged), each
// one sent to its provider and cancelled before it answered. The provider never says: a cancelled stream is
// billed for its prompt, a cancelled whole answer may be generated and
// billed to the end. So each is charged its prompt (the winner's count,
// else the gateway's estimate) and, for a whole answer, as many output
// tokens as the winner wrote, within its own output cap: the same
// request, answered at about the same length, at the loser's prices.
func LostMicros(x *filters.Exchange, winner filters.Usage) int64 {
	var total int64
	for _, a := range x.Attempts() {
		if a.Outcome().Cause != filters.CauseHedged || a.SentAt().IsZero() {
			continue
		}
		u := filters.Usage{PromptTokens: winner.PromptTokens}
		if x.Chat != nil {
			if u.PromptTokens == 0 {
				u.PromptTokens = openaiapi.EstimatePromptTokens(x.Chat)
			}
			if !x.Chat.Stream {
				u.CompletionTokens = min(winner.CompletionTokens, a.Target.Model.OutputLimit(x.Chat.OutputCap()))
			}
		}
		total += Cost(a.Target.Model, u)
	}
	return total
}
