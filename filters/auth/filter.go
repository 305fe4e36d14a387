// Package auth is the filter that authenticates virtual keys.
//
// A client sends "Authorization: Bearer <virtual key>". The filter hashes
// the key with SHA-256 and looks the hash up among the policy's keys; the
// key itself is never stored, logged or forwarded. A known key makes the
// caller its tenant (and app); anything else is refused with 401 in the
// OpenAI envelope. The client's Authorization header is removed from the
// request before it can reach a provider.
package auth

import (
	"context"
	"crypto/sha256"
	"net/http"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/openai"
)

func init() { filters.Register("auth", New) }

// Filter authenticates virtual keys.
type Filter struct{}

// New builds the auth filter; it takes no arguments.
func New(ref policy.FilterRef, _ filters.Deps) (filters.Filter, error) {
	if err := filters.NoArgs(ref); err != nil {
		return nil, err
	}
	return &Filter{}, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "auth" }

// RequestHeaders implements [filters.RequestHeadersHook].
func (*Filter) RequestHeaders(_ context.Context, x *filters.Exchange) error {
	x.RemoveRequestHeader("authorization")
	token := filters.BearerToken(x.Header)
	if token == "" {
		return filters.Reject(http.StatusUnauthorized, openai.TypeInvalidRequest, "missing_api_key",
			"you didn't provide an API key; send it as 'Authorization: Bearer YOUR_KEY'")
	}
	key := x.Policy.KeyByHash(sha256.Sum256([]byte(token)))
	if key == nil {
		return filters.Reject(http.StatusUnauthorized, openai.TypeInvalidRequest, "invalid_api_key",
			"the API key provided is not valid")
	}
	x.Caller = filters.Caller{Tenant: key.Tenant, Key: key, KeyName: key.Name, App: key.App}
	return nil
}

var _ filters.RequestHeadersHook = (*Filter)(nil)
