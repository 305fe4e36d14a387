package manage

import (
	"context"
	"net/http"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/store"
)

// SetDrill starts (down) or ends a fault drill on provider, a provider of
// p or [health.AllProviders]: routing treats it as down without touching
// it. The board shares the drill with the other replicas (nil: this
// replica only, as in tests); mon, when set, applies it here at once.
func SetDrill(ctx context.Context, p *policy.Policy, board store.HealthBoard, mon *health.Monitor, provider string, down bool) error {
	if provider != health.AllProviders && p.Provider(provider) == nil {
		return openaiapi.Errorf(http.StatusNotFound, openaiapi.TypeInvalidRequest, "unknown_provider",
			"no provider %q; use a provider of the policy or \"all\"", provider).WithParam("provider")
	}
	if board != nil {
		var err error
		if down {
			err = board.SetDrill(ctx, provider)
		} else {
			err = board.ClearDrill(ctx, provider)
		}
		if err != nil {
			return openaiapi.Errorf(http.StatusServiceUnavailable, openaiapi.TypeServer, "store_unavailable",
				"the drill could not be shared with the other replicas: the store is unavailable")
		}
	}
	if mon != nil {
		mon.SetDrill(provider, down)
	}
	return nil
}
