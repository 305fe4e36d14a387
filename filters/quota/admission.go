package quota

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// admission is what one request took from the store, so Done can settle
// it: windows to adjust, a reservation to commit or release.
type admission struct {
	tenant *policy.Tenant
	app    string
	demand demand
	// tokens is the estimate charged to tokens-per-minute windows.
	tokens int64
	// windows are the caller's window counters this request was added to.
	windows []charge
	// target is the deployment whose windows (its own and its provider's)
	// this request was counted in, if any, and targetWindows those windows.
	target        *policy.Model
	targetWindows []charge
	resv          store.ReservationID
	// lines are the budget lines reserved on (reserved), or to record the
	// spend on once the store is back (unreserved: admitted during an
	// outage under budgets that fail open).
	lines      []store.BudgetLine
	reserved   bool
	unreserved bool
	// uncertain is set when a Reserve failed in a way that may still have
	// reached the store (a timeout): Done releases the ID to be sure.
	uncertain bool
	headers   rateHeaders
	// left is the least the caller has left of its budgets after the
	// reservation, for the request's trace; -1 when no budget applies.
	left int64
	// refused is set when the quota filter itself refused the request: the
	// request windows it was counted in, its provider's included, get it
	// back.
	refused bool
}

// charge is one window counter an admission added to.
type charge struct {
	ref    store.WindowRef
	tokens bool // a tokens-per-minute window; else requests
}

// scope is one holder of limits: the key, the calling app, a tag the
// request carries or the tenant.
type scope struct {
	kind string // key, app, tag or tenant: a metric label
	id   store.Scope
	// tag is a tag scope's tag, key=value, for a client's message.
	tag    string
	rate   policy.RateLimit
	budget policy.Budget
	// maxCost is the scope's max_cost_per_request in micro-USD, 0 if none.
	maxCost int64
}

// describe names the scope for a client: "key web of tenant acme".
func (s scope) describe() string {
	switch {
	case s.id.Key != "":
		return "key " + s.id.Key + " of tenant " + s.id.Tenant
	case s.id.App != "":
		return "app " + s.id.App + " of tenant " + s.id.Tenant
	case s.id.Tag != "":
		return "tag " + s.tag + " of tenant " + s.id.Tenant
	}
	return "tenant " + s.id.Tenant
}

// windowName prefixes a window line with the scope below the tenant.
func (s scope) windowName(kind string) string {
	switch {
	case s.id.Key != "":
		return "key:" + s.id.Key + "/" + kind
	case s.id.App != "":
		return "app:" + s.id.App + "/" + kind
	}
	return kind
}

func (f *Filter) newAdmission(x *filters.Exchange) *admission {
	a := &admission{tenant: x.Caller.Tenant, app: x.Caller.App, demand: demandOf(x), left: -1}
	a.tokens = a.demand.tokens(x.Plan)
	return a
}

// scopes lists the caller's scopes, most specific first, so a key that
// runs out of its own bucket does not also drain its tenant's.
func scopes(x *filters.Exchange) []scope {
	t := x.Caller.Tenant
	// Room for the key, the app and the tenant: one allocation for the
	// request's scopes (a tag's budget grows it).
	out := make([]scope, 0, 3)
	if k := x.Caller.Key; k != nil {
		out = append(out, scope{kind: "key", id: store.Scope{Tenant: t.Name, Key: keyScope(k)}, rate: k.RateLimit, budget: k.Budget, maxCost: k.MaxCostPerRequestMicros})
	}
	if app := t.Apps[x.Caller.App]; app != nil {
		out = append(out, scope{kind: "app", id: store.Scope{Tenant: t.Name, App: app.Name}, rate: app.RateLimit, budget: app.Budget})
	}
	if len(t.TagBudgets) > 0 {
		out = tagScopes(out, t, x.Labels.Tags)
	}
	return append(out, scope{kind: "tenant", id: store.Scope{Tenant: t.Name}, rate: t.RateLimit, budget: t.Budget, maxCost: t.MaxCostPerRequestMicros})
}

// tagScopes adds a scope for each tag of the request the tenant budgets,
// in the order of their keys, so that the same tags make the same budget
// lines (and the same lease).
func tagScopes(out []scope, t *policy.Tenant, tags map[string]string) []scope {
	from := len(out)
	for k, v := range tags {
		tag := policy.Tag{Key: k, Value: v}
		if b, ok := t.TagBudgets[tag]; ok {
			out = append(out, scope{kind: "tag", id: store.Scope{Tenant: t.Name, Tag: tagScope(tag)}, tag: tag.String(), budget: b})
		}
	}
	slices.SortFunc(out[from:], func(a, b scope) int { return strings.Compare(a.tag, b.tag) })
	return out
}

// tagScope is a tag as the store knows it: key=value when the store can
// hold it in a key, else its digest.
func tagScope(t policy.Tag) string {
	if safeID(t.Key) && safeID(t.Value) && len(t.Key)+len(t.Value) < 64 {
		return t.String()
	}
	sum := sha256.Sum256([]byte(t.String()))
	return "sha-" + hex.EncodeToString(sum[:8])
}

// keyScope is the key's name as the store knows it. Policy key names are
// free text; one the store could not hold is named by its hash instead.
func keyScope(k *policy.Key) string {
	if safeID(k.Name) {
		return k.Name
	}
	return fmt.Sprintf("sha-%x", k.Hash[:8])
}

// claim is the part of a request's admission the store makes in one Admit,
// with the scope each bucket, window and budget line belongs to.
type claim struct {
	store.Admission
	// firstTarget is the plan's first deployment when the admission counts
	// it (and its provider) in advance (Provider), and first the answer.
	firstTarget  *policy.Model
	first        *providerCheck
	bucketOwners []scope
	kinds        []charge // per window line: requests or tokens
	windowOwners []scope
	lines        []store.BudgetLine // the caller's budget lines, reserved on or not
	lineOwners   []scope
	budgetOpen   bool // every budget of the caller fails open
}

func claimOf(a *admission, sc []scope) *claim {
	c := &claim{Admission: store.Admission{Tenant: a.tenant.Name, Group: tenantGroup(a.tenant)}}
	for _, s := range sc {
		if s.rate.ReplenishRate > 0 {
			c.Buckets = append(c.Buckets, store.Bucket{Name: s.id.String(), ReplenishRate: s.rate.ReplenishRate, BurstCapacity: int64(s.rate.BurstCapacity)})
			c.bucketOwners = append(c.bucketOwners, s)
		}
	}
	c.Windows, c.kinds, c.windowOwners = windowLines(sc, a.tokens)
	c.lines, c.lineOwners, c.budgetOpen = budgetLines(sc)
	return c
}

// admit holds the request to the caller's limits in the order
// docs/BUDGETS.md gives: buckets, windows, the most a request may cost,
// budgets, then the provider's own limits. The buckets, windows and
// reservation are one store call, which also counts the first target's
// provider.
func (f *Filter) admit(ctx context.Context, x *filters.Exchange, a *admission) error {
	sc := scopes(x)
	p := &fit{d: a.demand, plan: x.Plan, downgrade: a.tenant.Downgrade, raced: raceOf(x)}
	if x.Hybrid != nil {
		p.judge = x.Hybrid.Judge
	}
	costly := capCost(sc, p)
	c := claimOf(a, sc)
	if costly == nil {
		if len(c.lines) > 0 {
			a.resv = reservationID(a.tenant.Name, x.ID)
			c.ID, c.Lines, c.Amount, c.TTL = a.resv, c.lines, p.amount(), f.cfg.ReservationTTL
		}
		if first := p.plan[0].Model; limited(first) {
			c.firstTarget = first
			c.Provider = &store.WindowsCall{Group: providerGroup(first.Provider), Lines: providerLines(first, a.tokens)}
		}
	}
	refused, err := f.take(ctx, a, c)
	if a.left >= 0 {
		x.Trace.Note(filters.BudgetLeft(a.left))
	}
	if err != nil {
		return err
	}
	if costly != nil {
		return f.maxCostRefusal(a, costly)
	}
	if err := f.fitBudget(ctx, a, c, p, refused); err != nil {
		return err
	}
	p.apply(x, f.metrics, a)
	return f.providerLimits(ctx, x, a, c.first)
}

// take makes the claim in one Admit and reads its answer: rate-limit
// headers, the window charges and reservation Done settles, or a
// refusal. A refusal by a budget is returned apart, for the plan to be
// narrowed to fit it. The first target's provider is counted in the same
// round trip, ahead of its turn: a request that does not get that far
// gives the count back when it ends.
func (f *Filter) take(ctx context.Context, a *admission, c *claim) (*store.BudgetExceededError, error) {
	if len(c.Buckets) == 0 && len(c.Windows) == 0 && len(c.Lines) == 0 {
		return nil, nil // nothing of the tenant's: the provider is counted in its turn
	}
	cctx, cancel := f.call(ctx)
	res, err := f.store.Admit(cctx, c.Admission)
	cancel()
	if c.Provider != nil {
		c.first = &providerCheck{target: c.firstTarget, lines: c.Provider.Lines, res: res.Provider, err: res.ProviderErr}
		a.counted(c.first)
	}
	if err != nil {
		return nil, f.admitOutage(a, c, err)
	}
	for i, r := range res.Buckets {
		b := c.Buckets[i]
		toFull := time.Duration(float64(b.BurstCapacity-r.Remaining) / b.ReplenishRate * float64(time.Second))
		a.headers.requests.observe(b.BurstCapacity, r.Remaining, toFull)
		if !r.Allowed {
			// The windows were only read: the refusal still tells the
			// caller where its token limits stand.
			a.headers.observeWindows(res.Windows.Lines, c.kinds)
			e := filters.Reject(http.StatusTooManyRequests, openaiapi.TypeRateLimit, "rate_limit_exceeded",
				"rate limit reached for %s: a burst of %d requests, refilled at %s per second; try again in %s",
				c.bucketOwners[i].describe(), b.BurstCapacity, strconv.FormatFloat(b.ReplenishRate, 'f', -1, 64), seconds(r.RetryAfter))
			return nil, f.refuse(a, c.bucketOwners[i].kind, "bucket", e, r.RetryAfter)
		}
	}
	if len(c.Windows) > 0 {
		a.headers.observeWindows(res.Windows.Lines, c.kinds)
		if !res.Windows.Allowed {
			return nil, f.windowRefusal(a, c, res.Windows)
		}
		for i, st := range res.Windows.Lines {
			a.windows = append(a.windows, charge{ref: st.Ref, tokens: c.kinds[i].tokens})
		}
	}
	f.observe(a.tenant, c.Lines, res.Lines)
	for _, st := range res.Lines {
		if a.left < 0 || st.Remaining < a.left {
			a.left = st.Remaining
		}
	}
	var be *store.BudgetExceededError
	errors.As(res.Budget, &be)
	f.alert(c.Lines, res.Lines, be)
	switch {
	case errors.As(res.Budget, &be):
		return be, nil
	case res.Budget != nil:
		return nil, res.Budget
	case len(c.Lines) > 0:
		a.reserved, a.lines = true, c.Lines
	}
	return nil, nil
}

// windowRefusal is the refusal of a request that does not fit one of the
// caller's requests- or tokens-per-minute windows.
func (f *Filter) windowRefusal(a *admission, c *claim, res store.WindowResult) error {
	i := res.Refused
	l, st, s := c.Windows[i], res.Lines[i], c.windowOwners[i]
	unit, limit := "requests", "rpm"
	if c.kinds[i].tokens {
		unit, limit = "tokens", "tpm"
	}
	e := filters.Reject(http.StatusTooManyRequests, openaiapi.TypeRateLimit, "rate_limit_exceeded",
		"rate limit reached for %s on %s per minute: limit %d, used %d, requested %d; try again in %s",
		s.describe(), unit, l.Limit, st.Used, l.Amount, seconds(st.ResetIn))
	if l.Amount > l.Limit {
		e.WithHeader("x-should-retry", "false")
	}
	return f.refuse(a, s.kind, limit, e, st.ResetIn)
}

// admitOutage decides what an Admit the store could not make means, limit
// by limit in the order they are checked: each bucket's on_store_outage,
// the windows', then the budgets'. The first that fails closed refuses.
func (f *Filter) admitOutage(a *admission, c *claim, err error) error {
	if !errors.Is(err, store.ErrUnavailable) {
		return err
	}
	if len(c.Lines) > 0 {
		a.uncertain = true // the admission may have landed: Done releases the ID
	}
	for _, s := range c.bucketOwners {
		if err := f.outage(a, s.rate.FailOpen, "bucket", "rate limit", err); err != nil {
			return err
		}
	}
	if len(c.Windows) > 0 {
		open := true
		for _, s := range c.windowOwners {
			open = open && s.rate.FailOpen
		}
		if err := f.outage(a, open, "windows", "rate limit", err); err != nil {
			return err
		}
	}
	if len(c.Lines) > 0 {
		if err := f.outage(a, c.budgetOpen, "budget", "budget", err); err != nil {
			return err
		}
		a.unreserved, a.lines = true, c.Lines
	}
	return nil
}

// windowLines count the request, and its token estimate, in the caller's
// requests- and tokens-per-minute windows, all in the tenant's group so one
// call checks them together.
func windowLines(sc []scope, tokens int64) ([]store.WindowLine, []charge, []scope) {
	n := lineCount(sc, func(s scope) (int64, int64) { return int64(s.rate.RequestsPerMinute), int64(s.rate.TokensPerMinute) })
	if n == 0 {
		return nil, nil, nil
	}
	lines, kinds, owners := make([]store.WindowLine, 0, n), make([]charge, 0, n), make([]scope, 0, n)
	for _, s := range sc {
		if n := s.rate.RequestsPerMinute; n > 0 {
			lines = append(lines, store.WindowLine{Name: s.windowName("rpm"), Limit: int64(n), Size: time.Minute, Amount: 1})
			kinds, owners = append(kinds, charge{}), append(owners, s)
		}
		if n := s.rate.TokensPerMinute; n > 0 {
			lines = append(lines, store.WindowLine{Name: s.windowName("tpm"), Limit: int64(n), Size: time.Minute, Amount: tokens})
			kinds, owners = append(kinds, charge{tokens: true}), append(owners, s)
		}
	}
	return lines, kinds, owners
}

// lineCount is how many lines the scopes make, one for each of a scope's
// two limits that is set: every request of a limited tenant builds its
// lines, into slices sized once.
func lineCount(sc []scope, limits func(scope) (int64, int64)) int {
	n := 0
	for _, s := range sc {
		a, b := limits(s)
		if a > 0 {
			n++
		}
		if b > 0 {
			n++
		}
	}
	return n
}

// tenantGroup holds all of a tenant's windows. It is the tenant's scope
// string, so the store keeps the windows beside the tenant's budgets.
func tenantGroup(t *policy.Tenant) string { return store.Scope{Tenant: t.Name}.String() }

// refuse counts a refusal and dresses it with the rate-limit headers and
// retry-after.
func (f *Filter) refuse(a *admission, scopeKind, limit string, e *openaiapi.Error, retry time.Duration) error {
	f.metrics.refusals.WithLabelValues(a.tenant.Name, a.app, scopeKind, limit).Inc()
	e.WithHeader("retry-after", strconv.FormatInt(retrySeconds(retry), 10))
	for _, h := range a.headers.list() {
		e.WithHeader(h.Key, h.Value)
	}
	return e
}

// outage applies a limit's on_store_outage setting to a store failure:
// nil to serve unchecked, a 503 to refuse. Errors that are not outages
// (a bug, a bad argument) are returned as they are.
func (f *Filter) outage(a *admission, open bool, limit, what string, err error) error {
	if !errors.Is(err, store.ErrUnavailable) {
		return err
	}
	decision := "closed"
	if open {
		decision = "open"
	}
	f.metrics.outages.WithLabelValues(a.tenant.Name, limit, decision).Inc()
	if open {
		return nil
	}
	e := filters.Reject(http.StatusServiceUnavailable, openaiapi.TypeServiceUnavailable, "quota_unavailable",
		"the gateway cannot check your %s right now and this limit does not let requests through unchecked; try again shortly", what)
	return f.refuse(a, "tenant", "store_outage", e, time.Second)
}

func joinNames(names []string) string {
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// retrySeconds is a retry-after value: whole seconds, rounded up, at least 1.
func retrySeconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

func seconds(d time.Duration) string { return strconv.FormatInt(retrySeconds(d), 10) + "s" }
