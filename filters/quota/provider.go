package quota

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/store"
)

// providerCheck is a deployment's windows as counted for a request (its
// provider's own limits and the deployment's): the lines sent and the
// store's answer.
type providerCheck struct {
	target *policy.Model
	lines  []store.WindowLine
	res    store.WindowResult
	err    error
}

// limited reports whether a deployment or its provider has limits of its
// own.
func limited(d *policy.Model) bool {
	p := d.Provider
	return p.RequestsPerMinute > 0 || p.TokensPerMinute > 0 || d.Limited()
}

// providerGroup holds a provider's windows and those of its deployments,
// so one call counts a request in both.
func providerGroup(p *policy.Provider) string { return "provider:" + p.Name }

// deploymentLine prefixes the names of a deployment's own lines in its
// provider's group.
const deploymentLine = "model:"

// providerLines count a request and its token estimate against the limits
// of deployment d and of its provider.
func providerLines(d *policy.Model, tokens int64) []store.WindowLine {
	var lines []store.WindowLine
	add := func(prefix string, rpm, tpm int) {
		if rpm > 0 {
			lines = append(lines, store.WindowLine{Name: prefix + "rpm", Limit: int64(rpm), Size: time.Minute, Amount: 1})
		}
		if tpm > 0 {
			lines = append(lines, store.WindowLine{Name: prefix + "tpm", Limit: int64(tpm), Size: time.Minute, Amount: tokens})
		}
	}
	add("", d.Provider.RequestsPerMinute, d.Provider.TokensPerMinute)
	add(deploymentLine+d.Name+"/", d.RequestsPerMinute, d.TokensPerMinute)
	return lines
}

// counted notes the windows a check added to, for Done; noting one check
// twice notes it once.
func (a *admission) counted(c *providerCheck) {
	if c.err != nil || !c.res.Allowed {
		return
	}
	a.targetWindows = make([]charge, len(c.lines))
	for i, l := range c.lines {
		a.targetWindows[i] = charge{ref: c.res.Lines[i].Ref, tokens: strings.HasSuffix(l.Name, "tpm")}
	}
	a.target = c.target
}

// providerDeltas give back a request's count in its deployment's windows:
// requests once refused, tokens by what it did not use.
func (a *admission) providerDeltas(requests, tokens int64) []store.WindowDelta {
	var out []store.WindowDelta
	for _, c := range a.targetWindows {
		d := requests
		if c.tokens {
			d = tokens
		}
		if d != 0 {
			out = append(out, store.WindowDelta{Ref: c.ref, Delta: d})
		}
	}
	return out
}

// servedTokens corrects the token windows the request was counted in to
// the tokens it used, once its deployment (or, for the provider's own
// windows, another deployment of the same provider) served it.
func (a *admission) servedTokens(served *policy.Model, delta int64) []store.WindowDelta {
	if a.target == nil || served == nil || delta == 0 {
		return nil
	}
	var out []store.WindowDelta
	for _, c := range a.targetWindows {
		own := strings.HasPrefix(c.ref.Name, deploymentLine)
		if c.tokens && (served == a.target || (!own && served.Provider == a.target.Provider)) {
			out = append(out, store.WindowDelta{Ref: c.ref, Delta: delta})
		}
	}
	return out
}

// providerLimits counts the request against the deployment of the plan's
// first target and its provider. A provider at its own limit loses its
// targets, a deployment at its own limit itself, and the next one is
// tried; only when none is left is the request refused. The
// fallbacks behind the first admitted target are not counted: they are
// used only when it fails. first is the check the admission already made
// for the plan's first target, if it made one.
func (f *Filter) providerLimits(ctx context.Context, x *filters.Exchange, a *admission, first *providerCheck) error {
	if first != nil && first.target != x.Plan[0].Model {
		// Narrowed to fit the budget, the plan no longer starts with the
		// deployment checked in advance: give back what that counted, now.
		if a.target != nil {
			f.giveBack(ctx, a)
		}
		first = nil
	}
	// A provider at its limit loses every deployment on it; a deployment
	// at its own, only itself.
	full := map[*policy.Provider]bool{}
	fullDeployment := map[*policy.Model]bool{}
	var (
		kept  []filters.Target
		wait  time.Duration
		names []string
	)
	for _, t := range x.Plan {
		p := t.Provider()
		if full[p] || fullDeployment[t.Model] {
			continue
		}
		if len(kept) > 0 || !limited(t.Model) {
			kept = append(kept, t)
			continue
		}
		check := first
		first = nil
		if check == nil {
			check = &providerCheck{target: t.Model, lines: providerLines(t.Model, a.tokens)}
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
			line := check.lines[check.res.Refused].Name
			limit, own := strings.CutPrefix(line, deploymentLine+t.Model.Name+"/")
			name := p.Name
			if own {
				fullDeployment[t.Model] = true
				name += "/" + t.Model.Name
			} else {
				full[p] = true
			}
			f.metrics.moved.WithLabelValues(p.Name, limit).Inc()
			if r := check.res.Lines[check.res.Refused].ResetIn; wait == 0 || r < wait {
				wait = r
			}
			names = append(names, name)
			continue
		}
		a.counted(check)
		kept = append(kept, t)
	}
	if len(kept) == 0 {
		e := filters.Reject(http.StatusTooManyRequests, openaiapi.TypeRateLimit, "rate_limit_exceeded",
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
	a.target, a.targetWindows = nil, nil
}
