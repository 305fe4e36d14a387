// Package admin is the filter that serves the admin API under /admin, for
// operators holding the admin key: provider health and fault drills (and,
// as the other issues land, virtual keys and usage). It answers from the
// gateway itself; nothing reaches a provider.
//
// The admin key is known by its SHA-256 only (gateway.admin_key_sha256). A
// policy without one has no admin API: every call is refused.
package admin

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/audit"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/filterspec"
	"github.com/switchyard/switchyard/manage"
	"github.com/switchyard/switchyard/state/health"
	"github.com/switchyard/switchyard/state/priors"
	"github.com/switchyard/switchyard/state/store"
)

func init() { filters.Register("admin", New) }

// Filter serves the admin API.
type Filter struct {
	health *health.Monitor
	store  store.Store
	log    *slog.Logger
	trail  *audit.Logger
	routes map[string]handler
	gate   *manage.Gate
	learn  *priors.Learner
}

// handler answers one admin call: the status and a JSON-encodable body, or
// a refusal.
type handler func(ctx context.Context, x *filters.Exchange, sub string) (int, any, error)

// New builds the admin filter.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	if err := filterspec.NoArgs(ref); err != nil {
		return nil, err
	}
	f := &Filter{health: deps.Health, store: deps.Store, log: deps.Log(), trail: deps.Audit, gate: manage.NewGate(time.Now), learn: deps.Priors}
	f.routes = map[string]handler{
		"GET providers":   f.providers,
		"POST fault/down": f.fault(true),
		"POST fault/up":   f.fault(false),
	}
	maps.Copy(f.routes, usageRoutes(deps))
	maps.Copy(f.routes, f.keyRoutes())
	maps.Copy(f.routes, f.domainRoutes())
	return f, nil
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "admin" }

// RequestHeaders implements [filters.RequestHeadersHook]: the admin key is
// checked before the body is even read.
func (f *Filter) RequestHeaders(ctx context.Context, x *filters.Exchange) error {
	x.RemoveRequestHeader("authorization")
	addr := x.Header.Get("x-envoy-external-address")
	v, retry, first := f.gate.Check(&x.Policy.Gateway, addr, filters.BearerToken(x.Header))
	switch v {
	case manage.Admitted:
		return nil
	case manage.Disabled:
		return filters.Reject(http.StatusForbidden, openaiapi.TypePermission, "admin_disabled", "this gateway's policy sets no admin key")
	case manage.Throttled:
		if first {
			f.refused(ctx, x, v.Reason())
		}
		secs := strconv.Itoa(max(1, int(retry.Round(time.Second)/time.Second)))
		return filters.Reject(http.StatusTooManyRequests, openaiapi.TypeRateLimit, "too_many_failed_keys",
			"too many failed admin keys from your address; try again in %ss", secs).WithHeader("retry-after", secs)
	case manage.Missing:
		f.refused(ctx, x, v.Reason())
		return filters.Reject(http.StatusUnauthorized, openaiapi.TypeInvalidRequest, "missing_api_key", "the admin API needs 'Authorization: Bearer ADMIN_KEY'")
	}
	f.refused(ctx, x, v.Reason())
	return filters.Reject(http.StatusUnauthorized, openaiapi.TypeInvalidRequest, "invalid_api_key", "the admin key provided is not valid")
}

// RequestBody implements [filters.RequestBodyHook].
func (f *Filter) RequestBody(ctx context.Context, x *filters.Exchange) error {
	path := strings.TrimPrefix(strings.TrimPrefix(x.Path, x.Route.Path), "/")
	h, sub := f.match(x.Method, path)
	if h == nil {
		return filters.Reject(http.StatusNotFound, openaiapi.TypeInvalidRequest, "unknown_url", "no admin call %s %s", x.Method, x.Path)
	}
	status, body, err := h(ctx, x, sub)
	if err != nil {
		return err
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	x.Respond(status, b)
	return nil
}

// match finds the handler of "METHOD path", where a route may hold one
// wildcard segment ("keys/*", "keys/*/rotate") handed to the handler.
func (f *Filter) match(method, path string) (handler, string) {
	if h := f.routes[method+" "+path]; h != nil {
		return h, ""
	}
	segs := strings.Split(path, "/")
	for i := 1; i < len(segs); i++ {
		pattern := strings.Join(segs[:i], "/") + "/*"
		if i+1 < len(segs) {
			pattern += "/" + strings.Join(segs[i+1:], "/")
		}
		if h := f.routes[method+" "+pattern]; h != nil && segs[i] != "" {
			return h, segs[i]
		}
	}
	return nil, ""
}

// audit records an admin action, who did it and what changed, in the
// audit trail.
func (f *Filter) audit(ctx context.Context, x *filters.Exchange, action string, attrs ...slog.Attr) {
	f.trail.Admin(ctx, x.ID, "admin", action, attrs...)
}

// refused records a failed attempt at the admin API, so that guessing the
// admin key shows in the trail: each failure until its client is
// throttled, then one line a window for it; the presented token is never
// recorded.
func (f *Filter) refused(ctx context.Context, x *filters.Exchange, reason string) {
	f.trail.Admin(ctx, x.ID, "unauthenticated", "refused", slog.String("reason", reason),
		slog.String("method", x.Method), slog.String("path", clip(x.Path)))
}

// clip bounds a client string before it reaches the trail.
func clip(s string) string {
	if len(s) > 256 {
		return s[:256]
	}
	return s
}

func decode(x *filters.Exchange, v any) error {
	d := json.NewDecoder(strings.NewReader(string(x.Body)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return filters.Reject(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "invalid_body", "the body must be a JSON object of this call's fields: %v", err)
	}
	return nil
}

var (
	_ filters.RequestHeadersHook = (*Filter)(nil)
	_ filters.RequestBodyHook    = (*Filter)(nil)
)
