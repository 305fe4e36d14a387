package quota

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// metrics are the quota filter's collectors. Labels are bounded: tenant,
// app, provider, scope and limit kinds from the policy, never a key.
type metrics struct {
	refusals  *prometheus.CounterVec
	outages   *prometheus.CounterVec
	moved     *prometheus.CounterVec
	downgrade *prometheus.CounterVec
	settled   *prometheus.CounterVec
	spent     *prometheus.GaugeVec
	reserved  *prometheus.GaugeVec
	limit     *prometheus.GaugeVec
	remaining *prometheus.GaugeVec
	pressure  *prometheus.GaugeVec

	// budgetMu guards budgets, each budget period's gauges found once:
	// every admission sets four of them for each of its tenant's periods,
	// and a vector's lookup hashes the labels every time.
	budgetMu sync.RWMutex
	budgets  map[budgetPeriod]*budgetGauges
}

type budgetPeriod struct {
	tenant string
	period store.Period
}

type budgetGauges struct{ limit, spent, reserved, remaining prometheus.Gauge }

// budget returns the gauges of a tenant's budget period.
func (m *metrics) budget(tenant string, period store.Period) *budgetGauges {
	k := budgetPeriod{tenant, period}
	m.budgetMu.RLock()
	g := m.budgets[k]
	m.budgetMu.RUnlock()
	if g != nil {
		return g
	}
	p := period.String()
	g = &budgetGauges{
		limit:     m.limit.WithLabelValues(tenant, p),
		spent:     m.spent.WithLabelValues(tenant, p),
		reserved:  m.reserved.WithLabelValues(tenant, p),
		remaining: m.remaining.WithLabelValues(tenant, p),
	}
	m.budgetMu.Lock()
	m.budgets[k] = g
	m.budgetMu.Unlock()
	return g
}

var collectors filters.Collectors[*metrics]

// metricsFor returns the collectors registered on reg, made on its first
// use: the filters of every policy reload share them.
func metricsFor(reg prometheus.Registerer) *metrics { return collectors.For(reg, newMetrics) }

func newMetrics() (*metrics, []prometheus.Collector) {
	budget := []string{"tenant", "period"}
	m := &metrics{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_quota_refusals_total",
			Help: "Requests refused by the quota filter, by tenant, app, scope (tenant, app, key, provider) and limit (bucket, rpm, tpm, daily_budget, monthly_budget, max_cost, provider, store_outage).",
		}, []string{"tenant", "app", "scope", "limit"}),
		outages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_quota_store_outage_decisions_total",
			Help: "Limits the store could not check, by tenant, limit (bucket, windows, budget, provider, settle) and decision (open: served unchecked; closed: refused).",
		}, []string{"tenant", "limit", "decision"}),
		moved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_quota_provider_limited_total",
			Help: "Requests whose plan lost a provider that was at its own rate limit, by provider and limit (rpm, tpm).",
		}, []string{"provider", "limit"}),
		downgrade: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_quota_downgrades_total",
			Help: "Requests served from cheaper models because the worst case of the plan did not fit the budget, by tenant and app.",
		}, []string{"tenant", "app"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_quota_settlements_total",
			Help: "Budget reservations settled, by outcome (committed, released, late_commit, spooled, recorded, failed, ...).",
		}, []string{"outcome"}),
		spent: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_quota_budget_spent_micro_usd",
			Help: "Micro-USD committed in the current period of a tenant's budget, as last read from the store by this replica.",
		}, budget),
		reserved: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_quota_budget_reserved_micro_usd",
			Help: "Micro-USD held by reservations in flight against a tenant's budget, as last read from the store by this replica.",
		}, budget),
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_quota_budget_remaining_micro_usd",
			Help: "Micro-USD left in the current period of a tenant's budget, as last read from the store by this replica.",
		}, budget),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_quota_budget_limit_micro_usd",
			Help: "The limit of a tenant's budget in the current period, in micro-USD (beside spent: the share alerts watch).",
		}, budget),
		pressure: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "switchyard_quota_governor_pressure",
			Help: "The cost governor's level per tenant: 0 none, 1 expensive models lose weight, 2 cheap models only.",
		}, []string{"tenant"}),
		budgets: map[budgetPeriod]*budgetGauges{},
	}
	return m, []prometheus.Collector{m.refusals, m.outages, m.moved, m.downgrade, m.settled, m.spent, m.reserved, m.remaining, m.limit, m.pressure}
}
