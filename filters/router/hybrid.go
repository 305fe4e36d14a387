package router

import (
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
)

// hybridRequested reports whether x asks for the route's hybrid answer.
func (f *Filter) hybridRequested(x *filters.Exchange) bool {
	h := f.router.route.Hybrid
	return h != nil && x.Chat != nil && x.Chat.Model == h.Name
}

// hybrid plans a hybrid request: every model of the route's hybrid mode
// the caller may use and the health monitor admits, each one call. A
// stream is refused: the answer is picked among whole answers.
func (f *Filter) hybrid(x *filters.Exchange) error {
	h := f.router.route.Hybrid
	if x.Chat.Stream {
		return filters.Reject(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_value",
			"'%s' picks one of several whole answers and cannot stream; send stream: false, or name one model", h.Name).WithParam("stream")
	}
	key := HashID(x.ID)
	var names, skipped []string
	for _, m := range h.Models {
		if !policy.MayServe(x.Caller.Key, x.Caller.Tenant, m, "") {
			skipped = append(skipped, m.Name+" (not allowed)")
			continue
		}
		if f.health != nil {
			if a := f.health.Admit(m.Provider.Name, m.Series(), key); !a.Allowed {
				skipped = append(skipped, m.Name+" ("+a.Reason+")")
				continue
			}
		}
		x.Plan = append(x.Plan, filters.Target{Model: m})
		names = append(names, m.Name)
	}
	if len(x.Plan) == 0 {
		return filters.Reject(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "no_model_available",
			"no model of '%s' may serve this request (%s)", h.Name, strings.Join(skipped, ", "))
	}
	x.Hybrid = &filters.Hybrid{Pick: h.Pick, Judge: h.Judge}
	x.RouteReason = "hybrid: " + strings.Join(names, ", ") + "; pick " + string(h.Pick)
	if len(skipped) > 0 {
		x.RouteReason += "; skipped " + strings.Join(skipped, ", ")
	}
	return nil
}
