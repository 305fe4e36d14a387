package quota

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// demand is what a request may consume, known before it is sent.
type demand struct {
	// prompt is the estimated prompt (or embeddings input) tokens.
	prompt int
	// output is the client's output cap, 0 when it set none.
	output int
	// fit is set on a route that fits the output cap to each model's
	// context window (the route's fit_output_to_context).
	fit bool
	// choices is how many answers the provider writes (n), each up to
	// the output cap and each billed.
	choices int
	chat    bool
	// searches is the most web searches the answer may run, each billed
	// per use (Anthropic's max_uses, the Responses route's max_tool_calls),
	// when a provider of searchKind serves it: the client's own protocol,
	// the one a search tool passes through on (a translation leaves it
	// out).
	searches   int
	searchKind policy.Kind
}

func demandOf(x *filters.Exchange) demand {
	switch {
	case x.Route.API == policy.APICountTokens:
		// A token count is free at the provider and writes nothing: it
		// costs a request of the caller's rate limits, and no budget.
		return demand{}
	case x.Chat != nil:
		d := demand{output: x.Chat.OutputCap(), choices: x.Chat.Choices(), chat: true,
			searches: x.Chat.PricedToolUses, searchKind: searchKinds[x.Route.API]}
		if x.FitPrompt > 0 {
			d.prompt, d.fit = x.FitPrompt, true
		} else {
			d.prompt = openaiapi.EstimatePromptTokens(x.Chat)
		}
		return d
	case x.Embeddings != nil:
		n := 0
		for _, s := range x.Embeddings.Input.Texts {
			n += max(1, openaiapi.TextTokens(s))
		}
		for _, t := range x.Embeddings.Input.Tokens {
			n += max(1, len(t))
		}
		return demand{prompt: n}
	}
	return demand{}
}

// outputFor is the most m may write, over all the choices asked for:
// each choice as much as the translators let it (translator.Target's
// OutputLimit).
func (d demand) outputFor(m *policy.Model) int {
	if !d.chat {
		return 0
	}
	if d.fit {
		return m.FitOutput(d.output, d.prompt) * max(d.choices, 1)
	}
	return m.OutputLimit(d.output) * max(d.choices, 1)
}

// worst is the highest cost m may bill for the request, in micro-USD,
// rounded up: whatever the answer, its priced usage (translate.Cost) is no
// higher as long as the prompt estimate holds. A model a pattern admits
// unpriced is reserved at the pattern's stated price like any other.
func (d demand) worst(m *policy.Model) int64 {
	w := m.Price.Ceiling(d.prompt, d.outputFor(m))
	if d.searches > 0 && m.Provider != nil && m.Provider.Kind == d.searchKind {
		w += int64(d.searches) * m.ToolUseMicros("web_search")
	}
	return min(w, maxAmount)
}

// judged is the most a hybrid answer's judge may bill: it reads the
// conversation and every target's answer, within the bounds the server's
// call keeps (filters.JudgeRequest), and writes a few tokens.
//
// What it reads is clipped in bytes, and no token is shorter than a byte.
func (d demand) judged(j *policy.Model, legs []filters.Target) int64 {
	read := min(d.prompt, filters.JudgeClipBytes) + filters.JudgeOverheadTokens
	for _, t := range legs {
		read += min(d.outputFor(t.Model), filters.JudgeClipBytes)
	}
	return j.Price.Ceiling(read, filters.JudgeMaxTokens)
}

// searchKinds are the provider kinds a route's search tools pass through
// to.
var searchKinds = map[policy.API]policy.Kind{policy.APIMessages: policy.KindAnthropic, policy.APIResponses: policy.KindOpenAI}

// tokens is the estimate charged to tokens-per-minute windows: the prompt
// plus the largest output any target of the plan may write.
func (d demand) tokens(plan []filters.Target) int64 {
	out := 0
	for _, t := range plan {
		out = max(out, d.outputFor(t.Model))
	}
	return int64(d.prompt + out)
}

// maxAmount keeps amounts within what the store holds exactly.
const maxAmount = 1<<53 - 1

func (d demand) highest(plan []filters.Target) int64 {
	var w int64
	for _, t := range plan {
		w = max(w, d.worst(t.Model))
	}
	return w
}

// fitting keeps the targets whose worst case is at most limit. In order
// keeps the router's order; otherwise the cheapest come first (a downgrade).
func (d demand) fitting(plan []filters.Target, limit int64, inOrder bool) []filters.Target {
	var out []filters.Target
	for _, t := range plan {
		if d.worst(t.Model) <= limit {
			out = append(out, t)
		}
	}
	if !inOrder {
		slices.SortStableFunc(out, func(a, b filters.Target) int { return cmp.Compare(d.worst(a.Model), d.worst(b.Model)) })
	}
	return out
}

// budgetLines are the budget lines of every scope of the caller.
func budgetLines(sc []scope) ([]store.BudgetLine, []scope, bool) {
	n := lineCount(sc, func(s scope) (int64, int64) { return s.budget.DailyMicros, s.budget.MonthlyMicros })
	open, lines, owners := true, make([]store.BudgetLine, 0, n), make([]scope, 0, n)
	for _, s := range sc {
		if s.budget.DailyMicros > 0 {
			lines = append(lines, store.BudgetLine{Scope: s.id, Period: store.Daily, Limit: s.budget.DailyMicros})
			owners = append(owners, s)
		}
		if s.budget.MonthlyMicros > 0 {
			lines = append(lines, store.BudgetLine{Scope: s.id, Period: store.Monthly, Limit: s.budget.MonthlyMicros})
			owners = append(owners, s)
		}
		if s.budget.Set() {
			open = open && s.budget.FailOpen
		}
	}
	return lines, owners, open
}

// fit is the plan as the caller's budgets narrow it. When the whole plan
// does not fit a limit, the targets that do are kept: in the router's
// order as long as the first target fits (only fallbacks are dropped), or,
// for a tenant whose over_budget is downgrade, cheapest first. A hedge or
// a hybrid answer, whose targets may all bill, is dropped before any
// target.
type fit struct {
	d         demand
	plan      []filters.Target
	downgrade bool // the tenant's over_budget
	// raced is how many of the plan's first targets run at once, each
	// billed: two with a hedge, every one for a hybrid answer; 0 else.
	raced int
	// judge is a hybrid answer's judge, who bills too.
	judge      *policy.Model
	narrowed   bool
	downgraded bool
	unraced    bool
}

// raceOf is how many of x's targets run at once.
func raceOf(x *filters.Exchange) int {
	switch {
	case x.Hybrid != nil:
		return len(x.Plan)
	case x.Hedge != nil && len(x.Plan) > 1:
		return 2
	}
	return 0
}

// amount is the most the plan may cost: what one target may bill at
// worst, or what the raced targets (and a hybrid's judge) may bill
// together.
func (p *fit) amount() int64 {
	if p.raced == 0 {
		return p.d.highest(p.plan)
	}
	var w int64
	for _, t := range p.plan[:p.raced] {
		w += p.d.worst(t.Model)
	}
	if p.judge != nil {
		w += p.d.judged(p.judge, p.plan[:p.raced])
	}
	return min(w, maxAmount)
}

// narrow keeps the targets whose worst case is at most limit, and reports
// false when none may be kept.
func (p *fit) narrow(limit int64) bool {
	if p.raced > 0 {
		p.raced, p.judge, p.unraced = 0, nil, true
		if p.d.highest(p.plan) <= limit {
			return true
		}
	}
	if p.d.worst(p.plan[0].Model) <= limit {
		p.plan, p.narrowed = p.d.fitting(p.plan, limit, true), true
		return true
	}
	if p.downgrade {
		if kept := p.d.fitting(p.plan, limit, false); len(kept) > 0 {
			p.plan, p.narrowed, p.downgraded = kept, true, true
			return true
		}
	}
	return false
}

// apply gives the request its narrowed plan and says why.
func (p *fit) apply(x *filters.Exchange, m *metrics, a *admission) {
	switch {
	case p.unraced && x.Hybrid != nil:
		x.Hybrid = nil
		x.RouteReason += "; hybrid dropped to fit the budget: one model at a time"
	case p.unraced:
		x.Hedge = nil
		x.RouteReason += "; hedge dropped to fit the budget"
	}
	if !p.narrowed {
		return
	}
	x.Plan = p.plan
	if p.downgraded {
		m.downgrade.WithLabelValues(a.tenant.Name, a.app).Inc()
		x.RouteReason += "; downgraded to fit the budget"
	} else {
		x.RouteReason += "; fallbacks beyond the budget dropped"
	}
}

// costly is a request above a scope's max_cost_per_request however its
// plan is narrowed.
type costly struct {
	scope scope
	worst int64 // the first target's worst case
}

// capCost narrows the plan to each scope's max_cost_per_request. It needs
// no store, so it runs before admission, but its refusal comes after the
// rate limits', which are checked first.
func capCost(sc []scope, p *fit) *costly {
	for _, s := range sc {
		if s.maxCost > 0 && p.amount() > s.maxCost && !p.narrow(s.maxCost) {
			return &costly{scope: s, worst: p.d.worst(p.plan[0].Model)}
		}
	}
	return nil
}

func (f *Filter) maxCostRefusal(a *admission, c *costly) error {
	e := filters.Reject(http.StatusTooManyRequests, openaiapi.TypeInsufficientQuota, "insufficient_quota",
		"this request may cost up to %s USD, above the max_cost_per_request of %s (%s USD); lower max_tokens or shorten the prompt",
		usd(c.worst), c.scope.describe(), usd(c.scope.maxCost)).WithHeader("x-should-retry", "false")
	return f.refuse(a, c.scope.kind, "max_cost", e, 0)
}

// fitBudget takes a budget's refusal of the whole plan: it narrows the plan
// to what the refusing line has left and reserves again, until the plan
// fits or nothing is left, which is the refusal.
func (f *Filter) fitBudget(ctx context.Context, a *admission, c *claim, p *fit, be *store.BudgetExceededError) error {
	for be != nil {
		if !p.narrow(be.Remaining) {
			return f.overBudget(a, be, c.lineOwners[slices.IndexFunc(c.lines, func(l store.BudgetLine) bool {
				return l.Scope == be.Line.Scope && l.Period == be.Line.Period
			})])
		}
		cctx, cancel := f.call(ctx)
		err := f.store.Reserve(cctx, a.resv, c.lines, p.amount(), f.cfg.ReservationTTL)
		cancel()
		be = nil
		switch {
		case err == nil:
			a.reserved, a.lines = true, c.lines
		case errors.As(err, &be):
		case errors.Is(err, store.ErrUnavailable):
			a.uncertain = true
			if err := f.outage(a, c.budgetOpen, "budget", "budget", err); err != nil {
				return err
			}
			a.unreserved, a.lines = true, c.lines
		default:
			return err
		}
	}
	return nil
}

// overBudget is the refusal of a request its budget cannot cover.
func (f *Filter) overBudget(a *admission, be *store.BudgetExceededError, s scope) error {
	now := f.now().UTC()
	renew := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	limit := "daily_budget"
	if be.Line.Period == store.Monthly {
		renew = time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		limit = "monthly_budget"
	}
	e := filters.Reject(http.StatusTooManyRequests, openaiapi.TypeInsufficientQuota, "insufficient_quota",
		"the %s budget of %s is exhausted: %s of %s USD left, and this request may cost up to %s USD; it renews at %s",
		be.Line.Period, s.describe(), usd(be.Remaining), usd(be.Line.Limit), usd(be.Requested), renew.Format(time.RFC3339)).
		WithHeader("x-should-retry", "false")
	return f.refuse(a, s.kind, limit, e, renew.Sub(now))
}

// settle gives back what the request did not use, in one Settle: window
// counters are corrected to the tokens it used (all of it when quota
// refused it), the reservation is committed at the actual cost when the
// answer reported usage (even a stream cut short) and released otherwise.
func (f *Filter) settle(ctx context.Context, x *filters.Exchange, a *admission) {
	used := int64(0)
	if x.Usage.Known {
		used = int64(x.Usage.PromptTokens + x.Usage.CompletionTokens)
	}
	var s store.Settlement
	add := func(ref store.WindowRef, delta int64) {
		if delta != 0 {
			s.Windows = append(s.Windows, store.WindowDelta{Ref: ref, Delta: delta})
		}
	}
	for _, c := range a.windows {
		switch {
		case c.tokens:
			add(c.ref, used-a.tokens)
		case a.refused:
			add(c.ref, -1)
		}
	}
	switch {
	case a.refused:
		s.Windows = append(s.Windows, a.providerDeltas(-1, -a.tokens)...)
	default:
		if last := x.LastAttempt(); last != nil {
			s.Windows = append(s.Windows, a.servedTokens(last.Target.Model, used-a.tokens)...)
		}
	}
	commit := a.reserved && x.Usage.Known && !a.refused
	if a.reserved || a.uncertain {
		// An uncertain reservation may have landed after all: release it.
		s.ID, s.Release, s.Actual = a.resv, !commit, x.Usage.CostMicros
	}
	if s.ID != (store.ReservationID{}) || len(s.Windows) > 0 {
		cctx, cancel := f.call(ctx)
		res, err := f.store.Settle(cctx, s)
		cancel()
		f.lost(a, res.Lost)
		out := res.Outcome
		if commit && err != nil && f.spool != nil {
			out, err = f.spool.Keep(a.resv, x.Usage.CostMicros, err)
		}
		if a.reserved {
			f.settled(ctx, x, out, err)
		}
	}
	if a.unreserved && x.Usage.Known && x.Usage.CostMicros > 0 && !a.refused {
		f.record(ctx, x, a)
	}
}

// record writes the spend of a request admitted while the store was down,
// under a fresh ID: the failed reservation's may exist, released.
func (f *Filter) record(ctx context.Context, x *filters.Exchange, a *admission) {
	if f.spool == nil {
		f.settled(ctx, x, 0, errors.New("no spooler: spend admitted during a store outage is not recorded"))
		return
	}
	id := store.ReservationID{Tenant: a.resv.Tenant, Request: a.resv.Request + ".spend"}
	cctx, cancel := f.call(ctx)
	defer cancel()
	out, err := f.spool.Record(cctx, id, a.lines, x.Usage.CostMicros)
	if err == nil && out == store.OutcomeCommitted {
		f.metrics.settled.WithLabelValues("recorded").Inc()
		return
	}
	f.settled(ctx, x, out, err)
}

// settled counts a settlement; a failed one is logged (the store's errors
// name a tenant and a reservation, never a key).
func (f *Filter) settled(ctx context.Context, x *filters.Exchange, out store.Outcome, err error) {
	switch {
	case err != nil:
		f.metrics.settled.WithLabelValues("failed").Inc()
		f.log.WarnContext(ctx, "quota: settling a budget reservation failed", "request_id", x.ID, "error", err.Error())
	case out != 0:
		f.metrics.settled.WithLabelValues(out.String()).Inc()
	}
}

// lost counts window corrections the store was down for.
func (f *Filter) lost(a *admission, n int) {
	if n > 0 {
		f.metrics.outages.WithLabelValues(a.tenant.Name, "settle", "open").Add(float64(n))
	}
}

// usd renders micro-USD as USD without rounding small amounts away.
func usd(micros int64) string {
	return strconv.FormatFloat(float64(micros)/1e6, 'f', -1, 64)
}
