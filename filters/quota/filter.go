package quota

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/quota/quotaspec"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/store"
)

func init() { filters.Register("quota", New) }

// Filter enforces rate limits and budgets on one route.
type Filter struct {
	cfg     Config
	store   store.Store
	spool   *store.Spooler
	gov     policy.Governor
	log     *slog.Logger
	metrics *metrics
	alerts  *events.Alerter
	now     func() time.Time

	// pending holds each exchange's admission from the request body to
	// Done, which settles it.
	pending sync.Map // *filters.Exchange → *admission

	viewMu sync.Mutex
	views  map[string]view // tenant → last budget read
}

// New builds the quota filter of a route.
func New(ref policy.FilterRef, deps filters.Deps) (filters.Filter, error) {
	cfg, err := quotaspec.Parse(ref)
	if err != nil {
		return nil, err
	}
	return newFilter(cfg, deps, time.Now), nil
}

func newFilter(cfg Config, deps filters.Deps, now func() time.Time) *Filter {
	return &Filter{
		cfg: cfg, store: deps.Store, spool: deps.Spool, gov: deps.Policy.Gateway.Governor,
		log: deps.Log(), metrics: metricsFor(deps.Metrics), alerts: deps.Alerts, now: now, views: map[string]view{},
	}
}

// Name implements [filters.Filter].
func (*Filter) Name() string { return "quota" }

// RequestHeaders implements [filters.RequestHeadersHook]: the cost governor
// sets the pressure the router's body hook reads. A request of a route
// that reaches no model (a rating) is admitted here, against the caller's
// buckets and windows alone: it spends nothing of a budget, but a flood of
// them is held like any other.
func (f *Filter) RequestHeaders(ctx context.Context, x *filters.Exchange) error {
	if f.store == nil || x.Caller.Tenant == nil {
		return nil
	}
	if !x.Route.API.Models() {
		a := f.newAdmission(x)
		f.pending.Store(x, a)
		if _, err := f.take(ctx, a, claimOf(a, scopes(x))); err != nil {
			a.refused = true
			return err
		}
		return nil
	}
	x.Pressure = f.pressure(ctx, x.Caller.Tenant)
	return nil
}

// RequestBody implements [filters.RequestBodyHook]: admission. It runs
// after the router, so it sees (and may narrow) the plan.
func (f *Filter) RequestBody(ctx context.Context, x *filters.Exchange) error {
	if f.store == nil || x.Caller.Tenant == nil || len(x.Plan) == 0 {
		return nil
	}
	a := f.newAdmission(x)
	f.pending.Store(x, a)
	err := f.admit(ctx, x, a)
	if err != nil {
		a.refused = true
	}
	return err
}

// ResponseHeaders implements [filters.ResponseHeadersHook]: a served
// answer says where the caller stands, as OpenAI's do.
func (f *Filter) ResponseHeaders(_ context.Context, x *filters.Exchange) error {
	if v, ok := f.pending.Load(x); ok {
		for _, h := range v.(*admission).headers.list() {
			x.SetResponseHeader(h.Key, h.Value)
		}
	}
	return nil
}

// Done implements [filters.DoneHook]: it settles whatever admission took,
// whatever happened to the request.
func (f *Filter) Done(ctx context.Context, x *filters.Exchange, _ error) {
	if v, ok := f.pending.LoadAndDelete(x); ok {
		f.settle(ctx, x, v.(*admission))
	}
}

// call bounds one store call on the request path.
func (f *Filter) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return withLazyTimeout(ctx, f.cfg.StoreTimeout)
}

// safeID reports whether s may stand in a store key as it is: 1 to 64 of
// [A-Za-z0-9._-]. A loop, not a regexp: it runs twice per request.
func safeID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// reservationID names the request's reservation: its ID when that is safe
// to put in a store key (Envoy's are), and always a random suffix, since a
// client inside the network may choose its own request ID.
func reservationID(tenant, requestID string) store.ReservationID {
	var b [6]byte
	_, _ = rand.Read(b[:])
	req := hex.EncodeToString(b[:])
	if safeID(requestID) {
		req = requestID + "." + req
	}
	return store.ReservationID{Tenant: tenant, Request: req}
}

var (
	_ filters.RequestHeadersHook  = (*Filter)(nil)
	_ filters.RequestBodyHook     = (*Filter)(nil)
	_ filters.ResponseHeadersHook = (*Filter)(nil)
	_ filters.DoneHook            = (*Filter)(nil)
)
