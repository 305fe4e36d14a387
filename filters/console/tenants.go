package console

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/manage"
	"github.com/switchyard/switchyard/state/ledger"
	"github.com/switchyard/switchyard/state/store"
)

// tenantsView is the Tenants and keys page's.
type tenantsView struct {
	Governor policy.Governor
	Tenants  []tenantView
	// Issued is the key the change being answered made, with its secret:
	// the one time the secret is shown.
	Issued *manage.Key
}

type tenantView struct {
	Name   string
	Tier   string
	Bucket string
	// Bars are the tenant's budgets and rate limits against what it
	// spent and sent.
	Bars []bar
	Apps []appView
	Keys []manage.Key
	// Problem says what could not be read.
	Problem string
}

type appView struct {
	Name string
	// Bucket is the token bucket's limit, which no bar shows.
	Bucket string
	Bars   []bar
}

// bar is a limit and what is used of it, drawn as a <meter> whose colour
// turns amber and red at the cost governor's thresholds (Low and High).
type bar struct {
	Label string
	Used  string
	Limit string
	Value float64 // Used/Limit, may exceed 1
	Low   float64
	High  float64
	// Level is "ok", "amber" or "red", the same verdict as the colour,
	// for the text beside it.
	Level string
}

func newBar(g policy.Governor, label string, used, limit float64, format func(float64) string) bar {
	b := bar{Label: label, Used: format(used), Limit: format(limit), Value: used / limit, Low: g.HighAt, High: g.CheapOnlyAt, Level: "ok"}
	switch {
	case b.Value >= g.CheapOnlyAt:
		b.Level = "red"
	case b.Value >= g.HighAt:
		b.Level = "amber"
	}
	return b
}

func dollars(v float64) string { return money(int64(v)) }

func count(v float64) string { return thousands(int64(v)) }

// tenants reads, for every tenant of the policy, its budgets from the
// store, its traffic of the last minute from the ledger and its keys.
func (f *Filter) tenants(ctx context.Context, c *call) (any, error) {
	p := c.x.Policy
	v := &tenantsView{Governor: p.Gateway.Governor}
	for _, t := range p.Tenants {
		tv := tenantView{Name: t.Name, Tier: t.Tier, Bucket: rateText(t.RateLimit)}
		var probs []error
		bars, err := f.limitBars(ctx, p.Gateway.Governor, store.Scope{Tenant: t.Name}, t.Budget, t.RateLimit)
		probs = append(probs, err)
		tv.Bars = bars
		names := make([]string, 0, len(t.Apps))
		for n := range t.Apps {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			a := t.Apps[n]
			bars, err := f.limitBars(ctx, p.Gateway.Governor, store.Scope{Tenant: t.Name, App: n}, a.Budget, a.RateLimit)
			probs = append(probs, err)
			tv.Apps = append(tv.Apps, appView{Name: n, Bucket: rateText(a.RateLimit), Bars: bars})
		}
		tv.Keys, err = manage.ListKeys(ctx, f.store, p, t.Name)
		probs = append(probs, err)
		if err := errors.Join(probs...); err != nil {
			_, tv.Problem = f.refusal(c, err)
		}
		v.Tenants = append(v.Tenants, tv)
	}
	return v, nil
}

// limitBars are a scope's budgets, spent in the store, and its rate
// limits, against its requests and tokens of the last minute in the
// ledger. The daily budget comes with the current hour's slot of it,
// which is what the cost governor steers by (docs/BUDGETS.md).
func (f *Filter) limitBars(ctx context.Context, g policy.Governor, sc store.Scope, b policy.Budget, rl policy.RateLimit) ([]bar, error) {
	var bars []bar
	var probs []error
	if b.Set() && f.store == nil {
		probs = append(probs, errors.New("no store: budgets unknown"))
	}
	for _, l := range []store.BudgetLine{{Scope: sc, Period: store.Daily, Limit: b.DailyMicros}, {Scope: sc, Period: store.Monthly, Limit: b.MonthlyMicros}} {
		if l.Limit == 0 || f.store == nil {
			continue
		}
		st, err := f.store.Budget(ctx, l)
		if err != nil {
			probs = append(probs, err)
			continue
		}
		if l.Period == store.Daily {
			slot := float64(l.Limit) / 24
			bars = append(bars, newBar(g, "this hour's slot of the daily budget", float64(st.Hourly[st.CurrentHour]), slot, dollars))
			bars = append(bars, newBar(g, "today", float64(st.Spent), float64(l.Limit), dollars))
		} else {
			bars = append(bars, newBar(g, "this month", float64(st.Spent), float64(l.Limit), dollars))
		}
	}
	if (rl.RequestsPerMinute > 0 || rl.TokensPerMinute > 0) && f.usage.Ledger == nil {
		probs = append(probs, errors.New("no ledger: traffic unknown"))
	} else if rl.RequestsPerMinute > 0 || rl.TokensPerMinute > 0 {
		now := f.now()
		rows, err := f.usage.Ledger.Query(ctx, ledger.Filter{Tenant: sc.Tenant, App: sc.App, From: now.Add(-time.Minute), To: now.Add(time.Second)})
		switch {
		case err != nil:
			probs = append(probs, err)
		case len(rows) == 1:
			t := rows[0].Totals
			if rl.RequestsPerMinute > 0 {
				bars = append(bars, newBar(g, "requests in the last minute", float64(t.Requests), float64(rl.RequestsPerMinute), count))
			}
			if rl.TokensPerMinute > 0 {
				bars = append(bars, newBar(g, "tokens in the last minute", float64(t.InputTokens+t.OutputTokens), float64(rl.TokensPerMinute), count))
			}
		}
	}
	return bars, errors.Join(probs...)
}

// rateText describes a bucket limit that no bar shows.
func rateText(rl policy.RateLimit) string {
	if rl.ReplenishRate == 0 {
		return ""
	}
	return strconv.FormatFloat(rl.ReplenishRate, 'f', -1, 64) + "/s, bursts of " + strconv.Itoa(rl.BurstCapacity)
}
