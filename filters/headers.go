package filters

// The gateway's own HTTP headers, all in the x-switchyard- namespace.
// Clients send headers of their own for their own purposes (Claude Code
// sends X-App: cli on every request), so a short generic name the gateway
// reads as an instruction would be read from clients that never meant it.
const (
	// HeaderApp names the calling app among the apps of the key's tenant
	// (request).
	HeaderApp = "x-switchyard-app"
	// HeaderUser names the end user a request speaks for, when the body
	// does not (request); it keys the router's stickiness.
	HeaderUser = "x-switchyard-user"
	// HeaderUserLegacy is HeaderUser's first spelling, still read: no
	// popular client sends it for a purpose of its own.
	HeaderUserLegacy = "x-user-id"
	// HeaderCache turns the response cache on or off for one request
	// (request), and says hit, miss or stale (response).
	HeaderCache = "x-switchyard-cache"
	// HeaderModel and HeaderProvider name the model and the provider that
	// served the answer (response).
	HeaderModel    = "x-switchyard-model"
	HeaderProvider = "x-switchyard-provider"
	// HeaderFallbackCount counts the attempts after the first (response).
	HeaderFallbackCount = "x-switchyard-fallback-count"
	// HeaderRouteReason says why the router chose the model (response).
	HeaderRouteReason = "x-switchyard-route-reason"
	// HeaderDegraded marks an answer served in degraded mode, such as a
	// stale cache entry when every provider failed (response).
	HeaderDegraded = "x-switchyard-degraded"
	// HeaderTags are the request's billing tags, "key=value,key=value"
	// (request).
	HeaderTags = "x-switchyard-tags"
	// HeaderSession names the client session the request belongs to
	// (request).
	HeaderSession = "x-switchyard-session"
	// HeaderTraceID names the request's trace, when tracing is on
	// (response).
	HeaderTraceID = "x-switchyard-trace-id"
)
