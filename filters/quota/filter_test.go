package quota

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// TestRefusals sends `before` requests (each settled with beforeCost, the
// clock moving step after each), then one more, and checks how quota
// answers it.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(r *rig)
		key, body   string
		app         string // X-App
		before      int
		beforeUsage filters.Usage
		step        time.Duration
		wantStatus  int // 0: admitted
		wantCode    string
		wantMsg     string
		wantHeaders map[string]string
		wantRefusal [4]string // tenant, app, scope, limit
		wantPlan    []string
		wantOutage  [3]string // tenant, limit, decision counted once
	}{
		{
			name: "tenant token bucket", key: "sk-acme", body: chat("big", 100), before: 3,
			wantStatus: 429, wantCode: "rate_limit_exceeded", wantMsg: "rate limit reached for tenant acme: a burst of 3 requests",
			wantHeaders: map[string]string{
				"retry-after": "1", "x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0",
				"x-ratelimit-reset-requests": "3s", "x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "1000",
			},
			wantRefusal: [4]string{"acme", "", "tenant", "bucket"},
		},
		{
			name: "tenant requests per minute", key: "sk-acme", body: chat("small", 100), before: 5, step: time.Second,
			wantStatus: 429, wantCode: "rate_limit_exceeded", wantMsg: "tenant acme on requests per minute: limit 5, used 5, requested 1",
			wantHeaders: map[string]string{
				"retry-after": "45", "x-ratelimit-limit-requests": "5", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "45s",
			},
			wantRefusal: [4]string{"acme", "", "tenant", "rpm"},
		},
		{
			name: "tenant tokens per minute", key: "sk-acme", body: chat("small", 400), before: 2, beforeUsage: used(400, 900),
			wantStatus: 429, wantCode: "rate_limit_exceeded", wantMsg: "tenant acme on tokens per minute: limit 1000, used 816, requested 408",
			wantHeaders: map[string]string{"retry-after": "50", "x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "184"},
			wantRefusal: [4]string{"acme", "", "tenant", "tpm"},
		},
		{
			name: "a request above the tokens per minute never fits", key: "sk-acme", body: chat("small", 1000),
			wantStatus: 429, wantCode: "rate_limit_exceeded", wantMsg: "limit 1000, used 0, requested 1008",
			wantHeaders: map[string]string{"x-should-retry": "false"},
			wantRefusal: [4]string{"acme", "", "tenant", "tpm"},
		},
		{
			name: "app requests per minute", key: "sk-web", body: chat("small", 100), before: 4, step: time.Second,
			wantStatus: 429, wantCode: "rate_limit_exceeded", wantMsg: "app web of tenant acme on requests per minute: limit 4",
			wantHeaders: map[string]string{"x-ratelimit-limit-requests": "4", "x-ratelimit-remaining-requests": "0"},
			wantRefusal: [4]string{"acme", "web", "app", "rpm"},
		},
		{
			name: "X-App puts the request under the app's limits", key: "sk-acme", app: "web", body: chat("small", 100), before: 4, step: time.Second,
			wantStatus: 429, wantCode: "rate_limit_exceeded", wantMsg: "app web of tenant acme on requests per minute: limit 4",
			wantRefusal: [4]string{"acme", "web", "app", "rpm"},
		},
		{
			name: "key requests per minute", key: "sk-small", body: chat("small", 100), before: 2, step: time.Second,
			wantStatus: 429, wantCode: "rate_limit_exceeded", wantMsg: "key small-key of tenant acme on requests per minute: limit 2",
			wantHeaders: map[string]string{"x-ratelimit-limit-requests": "2", "x-ratelimit-remaining-requests": "0"},
			wantRefusal: [4]string{"acme", "", "key", "rpm"},
		},
		{
			name: "tenant daily budget", setup: func(r *rig) { r.spendEarlier("acme", 9_000) }, key: "sk-acme", body: chat("big", 100),
			wantStatus: 429, wantCode: "insufficient_quota",
			wantMsg:     "the daily budget of tenant acme is exhausted: 0.001 of 0.01 USD left, and this request may cost up to 0.00308 USD; it renews at 2026-03-16T00:00:00Z",
			wantHeaders: map[string]string{"retry-after": "39290", "x-should-retry": "false", "x-ratelimit-remaining-requests": "2"},
			wantRefusal: [4]string{"acme", "", "tenant", "daily_budget"},
		},
		{
			name: "app daily budget", key: "sk-web", body: chat("big", 100), before: 1, beforeUsage: used(10, 4_900),
			wantStatus: 429, wantCode: "insufficient_quota", wantMsg: "the daily budget of app web of tenant acme is exhausted: 0.0001 of 0.005 USD left",
			wantRefusal: [4]string{"acme", "web", "app", "daily_budget"},
		},
		{
			name: "key monthly budget", key: "sk-small", body: chat("small", 100), before: 2, beforeUsage: used(10, 1_900), step: time.Minute,
			wantStatus: 429, wantCode: "insufficient_quota",
			wantMsg:     "the monthly budget of key small-key of tenant acme is exhausted: 0.0002 of 0.004 USD left, and this request may cost up to 0.000208 USD; it renews at 2026-04-01T00:00:00Z",
			wantHeaders: map[string]string{"x-should-retry": "false"},
			wantRefusal: [4]string{"acme", "", "key", "monthly_budget"},
		},
		{
			name: "tenant max cost per request", key: "sk-acme", body: chat("big", 500),
			wantStatus: 429, wantCode: "insufficient_quota", wantMsg: "this request may cost up to 0.01508 USD, above the max_cost_per_request of tenant acme (0.005 USD)",
			wantHeaders: map[string]string{"x-should-retry": "false"},
			wantRefusal: [4]string{"acme", "", "tenant", "max_cost"},
		},
		{
			name: "key max cost drops only the fallback", key: "sk-small", body: chat("small", 100), wantPlan: []string{"small"},
		},
		{
			name: "a budget that covers the model but not its fallback keeps the model", setup: func(r *rig) { r.spendEarlier("acme", 9_000) },
			key: "sk-acme", body: chat("small", 100), wantPlan: []string{"small"},
		},
		{
			name: "downgrade serves the cheaper model", key: "sk-down", body: chat("big", 100), wantPlan: []string{"small"},
		},
		{
			name: "downgrade refuses when even the cheapest does not fit", setup: func(r *rig) { r.spend("down", 900) },
			key: "sk-down", body: chat("big", 100),
			wantStatus: 429, wantCode: "insufficient_quota", wantMsg: "the daily budget of tenant down is exhausted: 0.0001 of 0.001 USD left",
			wantRefusal: [4]string{"down", "", "tenant", "daily_budget"},
		},
		{
			name: "a provider at its requests per minute leaves the plan", key: "sk-free", body: chat("big", 100), before: 2,
			wantPlan: []string{"small"},
		},
		{
			name: "a provider at its tokens per minute leaves the plan", key: "sk-free", body: chat("big", 500),
			wantPlan: []string{"small"},
		},
		{
			name: "no provider left", key: "sk-free", body: chat("solo", 10), before: 2,
			wantStatus: 429, wantCode: "rate_limit_exceeded", wantMsg: "every provider that can serve this request is at its rate limit (pa); try again in 50s",
			wantHeaders: map[string]string{"retry-after": "50"},
			wantRefusal: [4]string{"free", "", "provider", "provider"},
		},
		{
			name: "a provider at its limit leaves the plan, counted with the caller's admission", key: "sk-acme", body: chat("big", 10), before: 2,
			wantPlan: []string{"small"},
		},
		{
			name: "no provider left, counted with the caller's admission", key: "sk-acme", body: chat("solo", 10), before: 2,
			wantStatus: 429, wantCode: "rate_limit_exceeded", wantMsg: "every provider that can serve this request is at its rate limit (pa); try again in 50s",
			wantHeaders: map[string]string{"retry-after": "50"},
			wantRefusal: [4]string{"acme", "", "provider", "provider"},
		},
		{
			name: "store down, limits that fail closed", setup: func(r *rig) { r.st.down.Store(true) }, key: "sk-closed", body: chat("small", 10),
			wantStatus: 503, wantCode: "quota_unavailable", wantMsg: "cannot check your rate limit right now",
			wantHeaders: map[string]string{"retry-after": "1"},
			wantRefusal: [4]string{"closed", "", "tenant", "store_outage"}, wantOutage: [3]string{"closed", "windows", "closed"},
		},
		{
			name: "store down, limits that fail open", setup: func(r *rig) { r.st.down.Store(true) }, key: "sk-acme", body: chat("small", 10),
			wantPlan: []string{"small", "big"}, wantOutage: [3]string{"acme", "budget", "open"},
		},
		{
			name: "embeddings are priced on their input", setup: func(r *rig) { r.spend("acme", 9_999) }, key: "sk-acme",
			body:       `{"model":"embed","input":["hello world","hi"]}`,
			wantStatus: 429, wantCode: "insufficient_quota", wantMsg: "0.000001 of 0.01 USD left, and this request may cost up to 0.000004 USD",
			wantRefusal: [4]string{"acme", "", "tenant", "daily_budget"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			var hdr []filters.Header
			if tc.app != "" {
				hdr = append(hdr, filters.Header{Key: filters.HeaderApp, Value: tc.app})
			}
			for i := range tc.before {
				x, err := r.send(tc.key, tc.body, hdr...)
				if err != nil {
					t.Fatalf("request %d of before: %v", i+1, err)
				}
				r.served(x)
				r.finish(x, tc.beforeUsage, nil)
				r.clock.Advance(tc.step)
			}
			x, err := r.send(tc.key, tc.body, hdr...)
			if o := tc.wantOutage; o[0] != "" {
				if got := value(t, metricsFor(r.reg).outages.WithLabelValues(o[0], o[1], o[2])); got != 1 {
					t.Errorf("outage decisions%v = %v, want 1", o, got)
				}
			}
			if tc.wantStatus == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if diff := cmp.Diff(tc.wantPlan, planOf(x)); diff != "" {
					t.Errorf("plan (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("admitted with plan %v; want %d %s", planOf(x), tc.wantStatus, tc.wantCode)
			}
			if err.Status != tc.wantStatus || err.Code != tc.wantCode {
				t.Errorf("got %d %s, want %d %s", err.Status, err.Code, tc.wantStatus, tc.wantCode)
			}
			if !strings.Contains(err.Message, tc.wantMsg) {
				t.Errorf("message %q does not contain %q", err.Message, tc.wantMsg)
			}
			for k, v := range tc.wantHeaders {
				if got := err.Headers[k]; got != v {
					t.Errorf("header %s: got %q, want %q (all: %v)", k, got, v, err.Headers)
				}
			}
			if _, ok := err.Headers["retry-after"]; !ok {
				t.Errorf("no retry-after header: %v", err.Headers)
			}
			rf := tc.wantRefusal
			if got := r.refusals(rf[0], rf[1], rf[2], rf[3]); got != 1 {
				t.Errorf("refusals%v = %v, want 1", rf, got)
			}
			r.finish(x, filters.Usage{}, err)
			for _, line := range []store.BudgetLine{{Scope: store.Scope{Tenant: rf[0]}, Period: store.Daily}} {
				if st := r.budget(line.Scope, line.Period); st.Reserved != 0 {
					t.Errorf("%s reserved %d after the refusal, want 0", line.Scope, st.Reserved)
				}
			}
		})
	}
}

// TestSettle follows one request from admission to Done and checks what it
// left in the store.
func TestSettle(t *testing.T) {
	acme := store.Scope{Tenant: "acme"}
	tests := []struct {
		name      string
		key, body string
		setup     func(r *rig)
		attempt   bool
		usage     filters.Usage
		cause     error
		downAt    bool // the store goes down before Done
		wantSpent int64
		wantTPM   int64 // the tenant's tokens-per-minute window after Done
		wantRPM   int64
		wantSpool int
		// wantOutcome is how the reservation was settled.
		wantOutcome string
		// wantLost is the window corrections the store was down for.
		wantLost float64
	}{
		{
			name: "success commits the actual cost", key: "sk-acme", body: chat("big", 100), attempt: true,
			usage:     filters.Usage{Known: true, PromptTokens: 8, CompletionTokens: 50, CostMicros: 1_580},
			wantSpent: 1_580, wantTPM: 58, wantRPM: 1, wantOutcome: "committed",
		},
		{
			name: "provider error releases everything", key: "sk-acme", body: chat("big", 100), attempt: true,
			cause: errors.New("503 every provider failed"), wantRPM: 1, wantOutcome: "released",
		},
		{
			name: "a cut stream commits what it used", key: "sk-acme", body: chat("big", 100), attempt: true,
			usage: filters.Usage{Known: true, PromptTokens: 8, CompletionTokens: 20, CostMicros: 680}, cause: errClientGone,
			wantSpent: 680, wantTPM: 28, wantRPM: 1, wantOutcome: "committed",
		},
		{
			name: "a client that leaves before the answer costs nothing", key: "sk-acme", body: chat("big", 100), attempt: true,
			cause: errClientGone, wantRPM: 1, wantOutcome: "released",
		},
		{
			name: "a request quota refused gives its windows back", key: "sk-acme", body: chat("big", 100),
			setup: func(r *rig) { r.spendEarlier("acme", 9_000) }, wantSpent: 9_000,
		},
		{
			name: "a commit during an outage is spooled, then written", key: "sk-acme", body: chat("big", 100), attempt: true,
			usage:  filters.Usage{Known: true, PromptTokens: 8, CompletionTokens: 50, CostMicros: 1_580},
			downAt: true, wantSpent: 1_580, wantTPM: 108, wantRPM: 1, wantSpool: 1, wantOutcome: "spooled",
			wantLost: 2, // the tenant's tokens window and the provider's
		},
		{
			name: "spend admitted during an outage is recorded when the store is back", key: "sk-acme", body: chat("big", 100), attempt: true,
			setup:     func(r *rig) { r.st.down.Store(true) },
			usage:     filters.Usage{Known: true, PromptTokens: 8, CompletionTokens: 50, CostMicros: 1_580},
			wantSpent: 1_580, wantSpool: 1, wantOutcome: "spooled",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			x, refusal := r.send(tc.key, tc.body)
			cause := tc.cause
			if refusal != nil {
				cause = refusal
			}
			if tc.attempt {
				if refusal != nil {
					t.Fatalf("refused: %v", refusal)
				}
				r.served(x)
			}
			if tc.downAt {
				r.st.down.Store(true)
			}
			r.finish(x, tc.usage, cause)
			if tc.wantOutcome != "" {
				if got := value(t, metricsFor(r.reg).settled.WithLabelValues(tc.wantOutcome)); got != 1 {
					t.Errorf("settlements{outcome=%q} = %v, want 1", tc.wantOutcome, got)
				}
			}
			if got := value(t, metricsFor(r.reg).outages.WithLabelValues("acme", "settle", "open")); got != tc.wantLost {
				t.Errorf("settle outage decisions %v, want %v", got, tc.wantLost)
			}
			if got := r.spool.Len(); got != tc.wantSpool {
				t.Errorf("spooled %d, want %d", got, tc.wantSpool)
			}
			r.st.down.Store(false)
			if _, err := r.spool.Replay(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, p := range []store.Period{store.Daily, store.Monthly} {
				st := r.budget(acme, p)
				if st.Spent != tc.wantSpent || st.Reserved != 0 {
					t.Errorf("%s: spent %d, reserved %d; want %d, 0", p, st.Spent, st.Reserved, tc.wantSpent)
				}
			}
			res, err := r.mem.AddWindows(context.Background(), "tenant:acme", []store.WindowLine{
				{Name: "rpm", Limit: 5, Size: time.Minute}, {Name: "tpm", Limit: 1000, Size: time.Minute},
			})
			if err != nil {
				t.Fatal(err)
			}
			if rpm, tpm := res.Lines[0].Used, res.Lines[1].Used; rpm != tc.wantRPM || tpm != tc.wantTPM {
				t.Errorf("windows: rpm %d, tpm %d; want %d, %d", rpm, tpm, tc.wantRPM, tc.wantTPM)
			}
		})
	}
}

// TestSuccessHeaders: an admitted request's answer carries the tightest
// limits, as OpenAI's answers do.
func TestSuccessHeaders(t *testing.T) {
	r := newRig(t)
	x, err := r.send("sk-web", chat("small", 100))
	if err != nil {
		t.Fatal(err)
	}
	r.chains["chat"].ResponseHeaders(context.Background(), x)
	set, _ := x.TakeResponseMutations()
	got := map[string]string{}
	for _, h := range set {
		if strings.HasPrefix(h.Key, "x-ratelimit-") {
			got[h.Key] = h.Value
		}
	}
	want := map[string]string{
		// The bucket (3, 2 left) is looser than the app's 4 per minute (3 left).
		"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "2", "x-ratelimit-reset-requests": "1s",
		"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "892", "x-ratelimit-reset-tokens": "50s",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

// TestBucketOverTime: ten requests a second for five simulated seconds
// against a bucket of 3 refilled at 1/s let through the burst and one a
// second.
func TestBucketOverTime(t *testing.T) {
	r := newRig(t)
	allowed := 0
	for range 51 { // 0s to 5s
		x, err := r.send("sk-bursty", chat("small", 10))
		if err == nil {
			allowed++
		}
		r.finish(x, filters.Usage{}, err)
		r.clock.Advance(100 * time.Millisecond)
	}
	if allowed != 3+5 {
		t.Errorf("allowed %d, want 8", allowed)
	}
}

// used is the usage of an answer of completion tokens to "hello".
func used(completion int, cost int64) filters.Usage {
	return filters.Usage{Known: true, PromptTokens: 8, CompletionTokens: completion, CostMicros: cost}
}

func TestGovernorLevel(t *testing.T) {
	g := policyGovernor(0.8, 0.95, 1_000)
	hour := func(spent, remaining int64) store.BudgetState {
		st := store.BudgetState{CurrentHour: 13, Remaining: remaining}
		st.Hourly[13] = spent
		st.Hourly[12] = 999_999 // other hours do not count
		return st
	}
	tests := []struct {
		name string
		st   store.BudgetState
		want int
	}{
		// 24_000 a day is 1_000 an hour.
		{"quiet hour", hour(100, 20_000), 0},
		{"just under high_at", hour(799, 20_000), 0},
		{"high_at of the slot", hour(800, 20_000), 1},
		{"cheap_only_at of the slot", hour(950, 20_000), 2},
		{"under the floor", hour(0, 999), 2},
		{"at the floor", hour(0, 1_000), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := governorLevel(g, 24_000, tc.st); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// TestGovernorSteersTheRouter: pressure is set before the router runs, so a
// tenant whose hour is spent gets only cheap models.
func TestGovernorSteersTheRouter(t *testing.T) {
	tests := []struct {
		name         string
		spent        int64 // this hour, of acme's 10_000 a day (416.67 an hour)
		wantPressure int
		wantPlan     []string
	}{
		{"calm", 100, 0, []string{"big", "small"}},
		{"high", 350, 1, []string{"big", "small"}},
		{"cheap only", 400, 2, []string{"small"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.spend("acme", tc.spent)
			x, err := r.send("sk-acme", chat("big", 10))
			if err != nil {
				t.Fatal(err)
			}
			if x.Pressure != tc.wantPressure {
				t.Errorf("pressure %d, want %d", x.Pressure, tc.wantPressure)
			}
			if diff := cmp.Diff(tc.wantPlan, planOf(x)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if got := value(t, metricsFor(r.reg).spent.WithLabelValues("acme", "daily")); got != float64(tc.spent) {
				t.Errorf("spent gauge %v, want %d", got, tc.spent)
			}
		})
	}
}

// TestStoreCallsPerRequest counts the store calls of one request, after
// earlier ones filled the governor's view: an admission is one call, a
// provider's own limits included, and so is a settlement, whatever limits
// apply. Only a plan narrowed to fit a budget costs more.
func TestStoreCallsPerRequest(t *testing.T) {
	tests := []struct {
		name      string
		key, body string
		// earlier requests are sent first; the first fills the
		// governor's view.
		earlier  int
		wantSend map[string]int
		wantDone map[string]int
	}{
		{
			name: "buckets, windows and budgets of key, app and tenant", key: "sk-web", body: chat("small", 10),
			wantSend: map[string]int{"admit": 1}, wantDone: map[string]int{"settle": 1},
		},
		{
			name: "a provider with limits of its own", key: "sk-acme", body: chat("big", 10),
			wantSend: map[string]int{"admit": 1}, wantDone: map[string]int{"settle": 1},
		},
		{
			// It reserves again, and gives back at once its count at the
			// provider of the model it no longer starts with.
			name: "a plan narrowed to fit the budget", key: "sk-down", body: chat("big", 100),
			wantSend: map[string]int{"admit": 1, "reserve": 1, "settle": 1}, wantDone: map[string]int{"settle": 1},
		},
		{
			name: "a request its bucket refuses", key: "sk-bursty", body: chat("small", 10), earlier: 3,
			wantSend: map[string]int{"admit": 1}, // nothing was taken: nothing to settle
		},
		{
			name: "a tenant without limits", key: "sk-free", body: chat("small", 10),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.BudgetRefresh = time.Hour
			r := newRigWith(t, testPolicy, t0, cfg)
			for range max(tc.earlier, 1) {
				x, err := r.send(tc.key, tc.body)
				if err != nil {
					t.Fatal(err)
				}
				r.finish(x, filters.Usage{}, nil)
			}
			r.st.takeCalls()
			x, refusal := r.send(tc.key, tc.body)
			if diff := cmp.Diff(tc.wantSend, r.st.takeCalls(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("admission's store calls (-want +got):\n%s", diff)
			}
			var cause error
			if refusal != nil {
				cause = refusal
			} else {
				r.served(x)
			}
			r.finish(x, used(5, 100), cause)
			if diff := cmp.Diff(tc.wantDone, r.st.takeCalls(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("settlement's store calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProviderCountedWithTheAdmission: the first target's provider is
// counted in the admission's round trip, before the caller's limits have
// answered. A request that does not go to that provider gives its count
// back: when it ends if quota refused it, at once if its plan moved off
// the provider.
func TestProviderCountedWithTheAdmission(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(r *rig)
		key, body string
		wantSent  [2]int64 // provider pa's requests and tokens once admission is over
		wantDone  [2]int64 // and once the request ended
	}{
		{
			name: "admitted: counted, and its tokens corrected when it ends", key: "sk-acme", body: chat("big", 10),
			wantSent: [2]int64{1, 18}, wantDone: [2]int64{1, 13},
		},
		{
			name: "refused by the budget: given back when it ends", setup: func(r *rig) { r.spendEarlier("down", 900) },
			key: "sk-down", body: chat("big", 100),
			wantSent: [2]int64{1, 108}, wantDone: [2]int64{0, 0},
		},
		{
			name: "downgraded to another provider's model: given back at once", key: "sk-down", body: chat("big", 100),
			wantSent: [2]int64{0, 0}, wantDone: [2]int64{0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			pa := func() [2]int64 {
				t.Helper()
				w, err := r.mem.AddWindows(context.Background(), "provider:pa", []store.WindowLine{
					{Name: "rpm", Limit: 2, Size: time.Minute}, {Name: "tpm", Limit: 400, Size: time.Minute},
				})
				if err != nil {
					t.Fatal(err)
				}
				return [2]int64{w.Lines[0].Used, w.Lines[1].Used}
			}
			x, refusal := r.send(tc.key, tc.body)
			if got := pa(); got != tc.wantSent {
				t.Errorf("after admission: provider counts %v, want %v", got, tc.wantSent)
			}
			var cause error
			if refusal != nil {
				cause = refusal
			} else {
				r.served(x)
			}
			r.finish(x, used(5, 100), cause)
			if got := pa(); got != tc.wantDone {
				t.Errorf("after the end: provider counts %v, want %v", got, tc.wantDone)
			}
		})
	}
}

// TestGovernorFollowsAdmissions: with a long budget_refresh, the governor
// reads the store for a tenant's first request only; after that each
// admission brings back the figures the next request's pressure uses.
func TestGovernorFollowsAdmissions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BudgetRefresh = time.Hour
	r := newRigWith(t, testPolicy, t0, cfg)
	var pressure []int
	for i, cost := range []int64{350, 0, 0} { // acme's hour slot is 416 of its 10_000 a day
		x, err := r.send("sk-acme", chat("small", 10))
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		pressure = append(pressure, x.Pressure)
		r.served(x)
		r.finish(x, used(5, cost), nil)
	}
	// The first request's spend is committed after the second's admission
	// read the budget: the third request is the first to feel it.
	if diff := cmp.Diff([]int{0, 0, 1}, pressure); diff != "" {
		t.Errorf("pressure per request (-want +got):\n%s", diff)
	}
	if got := r.st.takeCalls()["budget"]; got != 2 {
		t.Errorf("budget reads %d, want 2 (daily and monthly, for the first request only)", got)
	}
	if got := value(t, metricsFor(r.reg).spent.WithLabelValues("acme", "daily")); got != 350 {
		t.Errorf("spent gauge %v, want 350 as the last admission saw it", got)
	}
}

// errClientGone stands for the server's Done cause when the client left.
var errClientGone = errors.New("the request ended before its response completed")

// TestSafeID: what may stand in a store key as it is; anything else is
// hashed (key names) or left out (request IDs).
func TestSafeID(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"6f1c9a2e-0b1d-4c3e-9f7a-1234567890ab", true},
		{"web.key_1", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"a:b", false},
		{"a b", false},
		{"{tenant}", false},
		{"é", false},
	} {
		if got := safeID(tt.s); got != tt.want {
			t.Errorf("safeID(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
