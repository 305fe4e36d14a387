package quota

import (
	"context"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/quota/store"
)

// view is a replica's recent reading of a tenant's daily budget.
type view struct {
	at    time.Time
	daily store.BudgetState
	ok    bool
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

// view returns the tenant's daily budget as read at most BudgetRefresh ago,
// reading the store (and refreshing the budget gauges, monthly included)
// when it is older. A store that cannot be read leaves the governor idle.
func (f *Filter) view(ctx context.Context, t *policy.Tenant) view {
	now := f.now()
	f.viewMu.Lock()
	v, ok := f.views[t.Name]
	f.viewMu.Unlock()
	if ok && now.Sub(v.at) < f.cfg.BudgetRefresh {
		return v
	}
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
		period := l.Period.String()
		f.metrics.spent.WithLabelValues(t.Name, period).Set(float64(st.Spent))
		f.metrics.reserved.WithLabelValues(t.Name, period).Set(float64(st.Reserved))
		f.metrics.remaining.WithLabelValues(t.Name, period).Set(float64(st.Remaining))
		if l.Period == store.Daily {
			v.daily, v.ok = st, true
		}
	}
	f.viewMu.Lock()
	f.views[t.Name] = v
	f.viewMu.Unlock()
	return v
}
