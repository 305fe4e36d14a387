package quota

import (
	"context"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/store"
)

// view is a replica's recent reading of a tenant's daily budget.
type view struct {
	at    time.Time
	daily store.BudgetState // Hourly holds the current hour only when taken from an admission
	ok    bool
	// loading is set while one request reads the store for the tenant;
	// the others keep the view they have meanwhile.
	loading bool
}

// pressure is the cost governor's level for a tenant (Exchange.Pressure).
// The daily budget is split into 24 hourly slots: with high_at of the
// current hour's slot spent, expensive models lose weight (1); with
// cheap_only_at spent, or less than floor_usd left of the day, only cheap
// models serve (2). It steers; the reservation is what enforces.
func (f *Filter) pressure(ctx context.Context, t *policy.Tenant) int {
	if !t.Budget.Set() {
		return 0
	}
	v := f.view(ctx, t)
	if !v.ok || t.Budget.DailyMicros == 0 {
		return 0
	}
	level := governorLevel(f.gov, t.Budget.DailyMicros, v.daily)
	f.metrics.pressure.WithLabelValues(t.Name).Set(float64(level))
	return level
}

func governorLevel(g policy.Governor, daily int64, st store.BudgetState) int {
	if st.Remaining < g.FloorMicros {
		return 2
	}
	share := float64(st.Hourly[st.CurrentHour]) * 24 / float64(daily)
	switch {
	case share >= g.CheapOnlyAt:
		return 2
	case share >= g.HighAt:
		return 1
	}
	return 0
}

// view returns the tenant's daily budget as read at most BudgetRefresh ago.
// A tenant that sends requests is read by their admissions (observe); only
// a view older than that, a tenant's first request or one after a quiet
// spell, reads the store here, one request at a time per tenant (refreshing
// the budget gauges, monthly included). A store that cannot be read leaves
// the governor idle.
func (f *Filter) view(ctx context.Context, t *policy.Tenant) view {
	now := f.now()
	f.viewMu.Lock()
	v, ok := f.views[t.Name]
	if ok && (now.Sub(v.at) < f.cfg.BudgetRefresh || v.loading) {
		f.viewMu.Unlock()
		return v
	}
	v.loading = true
	f.views[t.Name] = v
	f.viewMu.Unlock()

	v = view{at: now}
	scope := store.Scope{Tenant: t.Name}
	for _, l := range []store.BudgetLine{
		{Scope: scope, Period: store.Daily, Limit: t.Budget.DailyMicros},
		{Scope: scope, Period: store.Monthly, Limit: t.Budget.MonthlyMicros},
	} {
		if l.Limit == 0 {
			continue
		}
		cctx, cancel := f.call(ctx)
		st, err := f.store.Budget(cctx, l)
		cancel()
		if err != nil {
			continue
		}
		f.gauge(t.Name, l, st.Spent, st.Reserved, st.Remaining)
		if l.Period == store.Daily {
			v.daily, v.ok = st, true
		}
	}
	f.viewMu.Lock()
	if cur := f.views[t.Name]; cur.loading { // an admission may have brought a newer one
		f.views[t.Name] = v
	}
	f.viewMu.Unlock()
	return v
}

// observe takes the tenant's budget figures an admission brought back
// (states, one per line) as the governor's view and the gauges' values,
// so that a tenant that sends requests costs the governor no store call.
func (f *Filter) observe(t *policy.Tenant, lines []store.BudgetLine, states []store.LineState) {
	if len(states) != len(lines) {
		return
	}
	v := view{at: f.now()}
	for i, l := range lines {
		if l.Scope != (store.Scope{Tenant: t.Name}) {
			continue
		}
		st := states[i]
		f.gauge(t.Name, l, st.Spent, st.Reserved, st.Remaining)
		if l.Period == store.Daily {
			v.daily = store.BudgetState{Spent: st.Spent, Reserved: st.Reserved, Remaining: st.Remaining, CurrentHour: st.Hour}
			v.daily.Hourly[st.Hour] = st.HourSpent // the only slot the governor reads
			v.ok = true
		}
	}
	if v.ok {
		f.viewMu.Lock()
		f.views[t.Name] = v
		f.viewMu.Unlock()
	}
}

// alert hands every budget line's figures, as the admission brought them
// back, to the alerter, which announces the thresholds they cross; be is
// the refusal of the line that refused, if one did.
func (f *Filter) alert(lines []store.BudgetLine, states []store.LineState, be *store.BudgetExceededError) {
	if f.alerts == nil || len(states) != len(lines) {
		return
	}
	now := f.now().UTC()
	for i, l := range lines {
		start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
		if l.Period == store.Monthly {
			start = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		}
		f.alerts.Observe(events.Line{
			Tenant: l.Scope.Tenant, App: l.Scope.App, Key: l.Scope.Key, Period: l.Period.String(), PeriodStart: start,
			Limit: l.Limit, Spent: states[i].Spent, Refused: be != nil && be.Line == l,
		})
	}
}

// gauge sets the budget gauges of one of a tenant's periods.
func (f *Filter) gauge(tenant string, l store.BudgetLine, spent, reserved, remaining int64) {
	g := f.metrics.budget(tenant, l.Period)
	g.limit.Set(float64(l.Limit))
	g.spent.Set(float64(spent))
	g.reserved.Set(float64(reserved))
	g.remaining.Set(float64(remaining))
}
