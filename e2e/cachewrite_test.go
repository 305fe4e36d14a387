package e2e

import (
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/ledger"
)

// rowTokens are a ledger row's counts, for a request that wrote nothing to
// the provider's prompt cache: the row does not count writes apart.
func rowTokens(r ledger.Record) policy.Tokens {
	return policy.Tokens{Prompt: int(r.InputTokens), CacheRead: int(r.CachedTokens), Completion: int(r.OutputTokens)}
}
