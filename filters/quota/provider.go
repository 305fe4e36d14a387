package quota

import (
	"context"
	"net/http"
	"time"

	"github.com/switchyard/switchyard/apischema/openai"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// providerCheck is a provider's windows as counted for a request: the
// lines sent and the store's answer.
type providerCheck struct {
	provider *policy.Provider
	lines    []store.WindowLine
	res      store.WindowResult
	err      error
}

// limited reports whether a provider has limits of its own.
func limited(p *policy.Provider) bool { return p.RequestsPerMinute > 0 || p.TokensPerMinute > 0 }

func providerGroup(p *policy.Provider) string { return "provider:" + p.Name }

// providerLines count a request and its token estimate against a
// provider's own limits.
func providerLines(p *policy.Provider, tokens int64) []store.WindowLine {
	var lines []store.WindowLine
	if p.RequestsPerMinute > 0 {
		lines = append(lines, store.WindowLine{Name: "rpm", Limit: int64(p.RequestsPerMinute), Size: time.Minute, Amount: 1})
	}
	if p.TokensPerMinute > 0 {
		lines = append(lines, store.WindowLine{Name: "tpm", Limit: int64(p.TokensPerMinute), Size: time.Minute, Amount: tokens})
	}
	return lines
}

// counted notes the provider windows a check added to, for Done.
func (a *admission) counted(c *providerCheck) {
	if c.err != nil || !c.res.Allowed {
		return
	}
	for i, l := range c.lines {
		ref := c.res.Lines[i].Ref
		if l.Name == "rpm" {
			a.providerRPM = &ref
		} else {
			a.providerTPM = &ref
		}
	}
	a.provider = c.provider.Name
}

// providerDeltas give back a request's count in its provider's windows:
// requests once refused, tokens by what it did not use.
func (a *admission) providerDeltas(requests, tokens int64) []store.WindowDelta {
	var out []store.WindowDelta
	if a.providerRPM != nil && requests != 0 {
		out = append(out, store.WindowDelta{Ref: *a.providerRPM, Delta: requests})
	}
	if a.providerTPM != nil && tokens != 0 {
		out = append(out, store.WindowDelta{Ref: *a.providerTPM, Delta: tokens})
	}
	return out
}

// providerLimits counts the request against the provider of the plan's
// first target. A provider at its own limit loses its targets and the next
// one is tried; only when none is left is the request refused. The
// fallbacks behind the first admitted target are not counted: they are
// used only when it fails. first is the check the admission already made
// for the plan's first target, if it made one.
func (f *Filter) providerLimits(ctx context.Context, x *filters.Exchange, a *admission, first *providerCheck) error {
	if first != nil && first.provider != x.Plan[0].Provider() {
		// Narrowed to fit the budget, the plan no longer starts with the
		// provider checked in advance: give back what that counted, now.
		if a.provider != "" {
			f.giveBack(ctx, a)
		}
		first = nil
	}
	full := map[*policy.Provider]bool{}
	var (
		kept  []filters.Target
		wait  time.Duration
		names []string
	)
	for _, t := range x.Plan {
		p := t.Provider()
		if full[p] {
			continue
		}
		if len(kept) > 0 || !limited(p) {
			kept = append(kept, t)
			continue
		}
		check := first
		first = nil
		if check == nil {
			check = &providerCheck{provider: p, lines: providerLines(p, a.tokens)}
			cctx, cancel := f.call(ctx)
			check.res, check.err = f.store.AddWindows(cctx, providerGroup(p), check.lines)
			cancel()
		}
		if check.err != nil {
			// A provider's own limit is a courtesy to it: when it cannot be
			// checked the request goes anyway, and the provider may 429.
			if err := f.outage(a, true, "provider", "", check.err); err != nil {
				return err
			}
			kept = append(kept, t)
			continue
		}
		if !check.res.Allowed {
			full[p] = true
			f.metrics.moved.WithLabelValues(p.Name, check.lines[check.res.Refused].Name).Inc()
			if r := check.res.Lines[check.res.Refused].ResetIn; wait == 0 || r < wait {
				wait = r
			}
			names = append(names, p.Name)
			continue
		}
		a.counted(check)
		kept = append(kept, t)
	}
	if len(kept) == 0 {
		e := filters.Reject(http.StatusTooManyRequests, openai.TypeRateLimit, "rate_limit_exceeded",
			"every provider that can serve this request is at its rate limit (%s); try again in %s",
			joinNames(names), seconds(wait))
		return f.refuse(a, "provider", "provider", e, wait)
	}
	if len(kept) < len(x.Plan) {
		x.Plan = kept
		x.RouteReason += "; skipped providers at their rate limit: " + joinNames(names)
	}
	return nil
}

// giveBack returns the request's count in its provider's windows now, in
// one Settle.
func (f *Filter) giveBack(ctx context.Context, a *admission) {
	cctx, cancel := f.call(ctx)
	res, _ := f.store.Settle(cctx, store.Settlement{Windows: a.providerDeltas(-1, -a.tokens)})
	cancel()
	f.lost(a, res.Lost)
	a.provider, a.providerRPM, a.providerTPM = "", nil, nil
}
