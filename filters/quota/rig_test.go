package quota

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/filters/auth"
	"github.com/switchyard/switchyard/filters/router"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/store"
)

// t0 is a Sunday afternoon, ten seconds into a minute and five minutes into
// hour 13 of the day.
var t0 = time.Date(2026, 3, 15, 13, 5, 10, 0, time.UTC)

func sha(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}

// testPolicy prices two models so a request of "hello" (8 prompt tokens)
// with max_tokens 100 may cost big 8×10 + 100×30 = 3080 micro-USD and
// small 8×1 + 100×2 = 208.
var testPolicy = fmt.Sprintf(`
gateway:
  governor: {high_at: 0.8, cheap_only_at: 0.95, floor_usd: 0}
providers:
  - {name: pa, kind: openai, base_url: "http://127.0.0.1:1", limits: {requests_per_minute: 2, tokens_per_minute: 400}}
  - {name: pb, kind: openai, base_url: "http://127.0.0.1:2"}
models:
  - {name: big, provider: pa, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 10, output: 30}, fallback: [small]}
  - {name: small, provider: pb, context_window: 100000, max_output_tokens: 1000, cheap: true, price_usd_per_mtok: {input: 1, output: 2}}
  - {name: solo, provider: pa, context_window: 100000, max_output_tokens: 1000, price_usd_per_mtok: {input: 1, output: 2}}
  - {name: embed, provider: pb, context_window: 8000, capabilities: [embeddings], price_usd_per_mtok: {input: 1, output: 0}}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions, filters: [auth, router, quota], routing: {fallback: [big]}}
  - {name: embeddings, path: /v1/embeddings, api: embeddings, filters: [auth, router, quota]}
tenants:
  - name: acme
    budget_usd: {daily: 0.01, monthly: 0.1}
    rate_limit: {replenish_rate: 1, burst_capacity: 3, requests_per_minute: 5, tokens_per_minute: 1000}
    max_cost_per_request_usd: 0.005
    apps:
      - {name: web, budget_usd: {daily: 0.005}, rate_limit: {requests_per_minute: 4}}
      - {name: batch}
    keys:
      - {name: k1, sha256: %s}
      - {name: web-key, app: web, sha256: %s}
      - {name: small-key, sha256: %s, budget_usd: {monthly: 0.004}, rate_limit: {requests_per_minute: 2}, max_cost_per_request_usd: 0.003}
  - name: down
    over_budget: downgrade
    budget_usd: {daily: 0.001}
    keys: [{name: d, sha256: %s}]
  - name: closed
    budget_usd: {daily: 1, on_store_outage: closed}
    rate_limit: {requests_per_minute: 100, on_store_outage: closed}
    keys: [{name: c, sha256: %s}]
  - name: free
    keys: [{name: f, sha256: %s}]
  - name: bursty
    rate_limit: {replenish_rate: 1, burst_capacity: 3}
    keys: [{name: b, sha256: %s}]
`, sha("sk-acme"), sha("sk-web"), sha("sk-small"), sha("sk-down"), sha("sk-closed"), sha("sk-free"), sha("sk-bursty"))

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// flaky is a store that is unavailable while down. It counts the budget
// and limit calls made to it, down or not.
type flaky struct {
	store.Store
	down atomic.Bool

	mu    sync.Mutex
	calls map[string]int
}

// call counts op and fails it while the store is down.
func (s *flaky) call(op string) error {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[op]++
	s.mu.Unlock()
	if s.down.Load() {
		return fmt.Errorf("store %s: %w: connection refused", op, store.ErrUnavailable)
	}
	return nil
}

// takeCalls returns the calls counted so far and starts again.
func (s *flaky) takeCalls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func (s *flaky) TakeTokens(ctx context.Context, b store.Bucket, n int64) (store.BucketResult, error) {
	if err := s.call("take_tokens"); err != nil {
		return store.BucketResult{}, err
	}
	return s.Store.TakeTokens(ctx, b, n)
}

func (s *flaky) AddWindows(ctx context.Context, g string, l []store.WindowLine) (store.WindowResult, error) {
	if err := s.call("add_windows"); err != nil {
		return store.WindowResult{}, err
	}
	return s.Store.AddWindows(ctx, g, l)
}

func (s *flaky) AdjustWindow(ctx context.Context, r store.WindowRef, d int64) (bool, error) {
	if err := s.call("adjust_window"); err != nil {
		return false, err
	}
	return s.Store.AdjustWindow(ctx, r, d)
}

func (s *flaky) Reserve(ctx context.Context, id store.ReservationID, l []store.BudgetLine, a int64, ttl time.Duration) error {
	if err := s.call("reserve"); err != nil {
		return err
	}
	return s.Store.Reserve(ctx, id, l, a, ttl)
}

func (s *flaky) Commit(ctx context.Context, id store.ReservationID, a int64) (store.Outcome, error) {
	if err := s.call("commit"); err != nil {
		return 0, err
	}
	return s.Store.Commit(ctx, id, a)
}

func (s *flaky) Release(ctx context.Context, id store.ReservationID) (store.Outcome, error) {
	if err := s.call("release"); err != nil {
		return 0, err
	}
	return s.Store.Release(ctx, id)
}

func (s *flaky) Budget(ctx context.Context, l store.BudgetLine) (store.BudgetState, error) {
	if err := s.call("budget"); err != nil {
		return store.BudgetState{}, err
	}
	return s.Store.Budget(ctx, l)
}

// Admit fails the provider's windows too while down, as Redis does.
func (s *flaky) Admit(ctx context.Context, a store.Admission) (store.AdmissionResult, error) {
	if err := s.call("admit"); err != nil {
		var res store.AdmissionResult
		if a.Provider != nil {
			res.ProviderErr = err
		}
		return res, err
	}
	return s.Store.Admit(ctx, a)
}

// Settle loses every delta while down, and fails only a settlement that
// has a reservation, as Redis does.
func (s *flaky) Settle(ctx context.Context, st store.Settlement) (store.SettleResult, error) {
	err := s.call("settle")
	if err == nil {
		return s.Store.Settle(ctx, st)
	}
	res := store.SettleResult{Applied: make([]bool, len(st.Windows)), Lost: len(st.Windows)}
	if st.ID == (store.ReservationID{}) {
		return res, nil
	}
	return res, err
}

// rig is a chain of auth, router and quota over a memory store, with one
// clock for the store and the filter.
type rig struct {
	t      *testing.T
	clock  *fakeClock
	mem    *store.Memory
	st     *flaky
	spool  *store.Spooler
	pol    *policy.Policy
	reg    *prometheus.Registry
	chains map[string]*filters.Chain
	seq    int
}

func newRig(t *testing.T) *rig { return newRigFor(t, testPolicy, t0) }

// newRigFor builds a rig for another policy, its clock at start. Its quota
// filters read the governor's view on every request (budget_refresh 0).
func newRigFor(t *testing.T, yaml string, start time.Time) *rig {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BudgetRefresh = 0
	return newRigWith(t, yaml, start, cfg)
}

// newRigWith builds a rig whose quota filters have cfg.
func newRigWith(t *testing.T, yaml string, start time.Time, cfg Config) *rig {
	t.Helper()
	return newRigAlerting(t, yaml, start, cfg, nil)
}

// newRigAlerting builds a rig whose quota filters have cfg and hand the
// budget figures they see to alerts.
func newRigAlerting(t *testing.T, yaml string, start time.Time, cfg Config, alerts *events.Alerter) *rig {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "policy.yaml", Data: []byte(yaml)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, clock: &fakeClock{t: start}, pol: p, reg: prometheus.NewRegistry(), chains: map[string]*filters.Chain{}}
	r.mem = store.NewMemory(store.Options{Clock: r.clock})
	r.st = &flaky{Store: r.mem}
	r.spool = store.NewSpooler(r.st, 100, nil)
	for _, route := range p.Routes {
		deps := filters.Deps{Policy: p, Route: route, Store: r.st, Spool: r.spool, Metrics: r.reg, Alerts: alerts}
		a, err := auth.New(policy.FilterRef{Name: "auth"}, deps)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := router.New(policy.FilterRef{Name: "router"}, deps)
		if err != nil {
			t.Fatal(err)
		}
		r.chains[route.Name] = filters.NewChain([]filters.Filter{a, rt, newFilter(cfg, deps, r.clock.Now)})
	}
	return r
}

// send runs the request side of the chain; the error is the refusal.
func (r *rig) send(key, body string, hdr ...filters.Header) (*filters.Exchange, *openaiapi.Error) {
	r.t.Helper()
	path := "/v1/chat/completions"
	if strings.Contains(body, `"input"`) {
		path = "/v1/embeddings"
	}
	route := r.pol.Route(path)
	r.seq++
	x := &filters.Exchange{
		ID: fmt.Sprintf("req-%d", r.seq), Started: r.clock.Now(), Policy: r.pol, Route: route,
		Method: "POST", Path: path, Body: []byte(body),
		Header: append(filters.Headers{{Key: "authorization", Value: "Bearer " + key}}, hdr...),
	}
	c := r.chains[route.Name]
	err := c.RequestHeaders(context.Background(), x)
	if err == nil {
		err = c.RequestBody(context.Background(), x)
	}
	if err != nil {
		return x, filters.AsError(err, x.ID)
	}
	return x, nil
}

// finish ends an exchange the way the server does: the answer's usage (as
// translate would price it) and Done.
func (r *rig) finish(x *filters.Exchange, u filters.Usage, cause error) {
	r.t.Helper()
	x.Usage = u
	r.chains[x.Route.Name].Done(context.Background(), x, cause)
}

// served starts an attempt on the plan's first target, as Envoy would.
func (r *rig) served(x *filters.Exchange) {
	if _, ok := x.NewAttempt(1, r.clock.Now()); !ok {
		r.t.Fatal("no plan to attempt")
	}
}

func (r *rig) budget(scope store.Scope, p store.Period) store.BudgetState {
	r.t.Helper()
	st, err := r.mem.Budget(context.Background(), store.BudgetLine{Scope: scope, Period: p, Limit: 1 << 40})
	if err != nil {
		r.t.Fatal(err)
	}
	return st
}

// spend commits micro-USD on a tenant's daily and monthly lines in the
// current hour, as earlier requests would have.
func (r *rig) spend(tenant string, micros int64) {
	r.t.Helper()
	ctx := context.Background()
	id := store.ReservationID{Tenant: tenant, Request: fmt.Sprintf("earlier-%d", r.seq)}
	r.seq++
	lines := []store.BudgetLine{
		{Scope: store.Scope{Tenant: tenant}, Period: store.Daily, Limit: 1 << 40},
		{Scope: store.Scope{Tenant: tenant}, Period: store.Monthly, Limit: 1 << 40},
	}
	if err := r.mem.Reserve(ctx, id, lines, micros, time.Hour); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.mem.Commit(ctx, id, micros); err != nil {
		r.t.Fatal(err)
	}
}

// spendEarlier spends two hours ago, out of the cost governor's sight.
func (r *rig) spendEarlier(tenant string, micros int64) {
	r.t.Helper()
	r.clock.Advance(-2 * time.Hour)
	r.spend(tenant, micros)
	r.clock.Advance(2 * time.Hour)
}

func (r *rig) refusals(tenant, app, scope, limit string) float64 {
	return value(r.t, metricsFor(r.reg).refusals.WithLabelValues(tenant, app, scope, limit))
}

func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	switch {
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	}
	return 0
}

func chat(model string, maxTokens int) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"hello"}]}`, model, maxTokens)
}

func planOf(x *filters.Exchange) []string {
	var out []string
	for _, t := range x.Plan {
		out = append(out, t.Model.Name)
	}
	return out
}

func policyGovernor(high, cheap float64, floor int64) policy.Governor {
	return policy.Governor{HighAt: high, CheapOnlyAt: cheap, FloorMicros: floor}
}
