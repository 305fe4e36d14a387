package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Admit implements Requests: one script on the tenant's slot, and the
// provider's windows pipelined beside it.
func (r *Redis) Admit(ctx context.Context, a Admission) (AdmissionResult, error) {
	if err := a.check(); err != nil {
		return AdmissionResult{}, err
	}
	keys := []string{r.expiryKey(a.Tenant)}
	if a.reserves() {
		if err := r.indexTenant(ctx, "admit", a.Tenant); err != nil {
			// Nothing was sent, the provider's windows included: their
			// error is this one (a caller reads ProviderErr to know whether
			// Provider holds an answer).
			res := AdmissionResult{}
			if a.Provider != nil {
				res.ProviderErr = err
			}
			return res, err
		}
		keys = append(keys, r.resKey(a.ID))
	}
	args := make([]any, 0, 10+5*len(a.Buckets)+4*len(a.Windows)+3*len(a.Lines))
	args = append(args, r.now(), r.tenantBase(a.Tenant), r.retention.Milliseconds(), len(a.Buckets))
	for _, b := range a.Buckets {
		args = append(args, b.Name, strconv.FormatFloat(b.ReplenishRate, 'g', -1, 64), b.BurstCapacity, 1, b.ttl().Milliseconds())
	}
	args = append(args, a.Group, len(a.Windows))
	for _, l := range a.Windows {
		args = append(args, l.Name, l.Limit, l.Size.Milliseconds(), l.Amount)
	}
	if a.reserves() {
		args = append(args, a.ID.Request, a.Amount, a.TTL.Microseconds(), len(a.Lines))
		for _, l := range a.Lines {
			args = append(args, l.Scope.String(), l.Period.code(), l.Limit)
		}
	} else {
		args = append(args, "", 0, 0, 0)
	}
	calls := []scriptCall{{admitScript, keys, args}}
	if a.Provider != nil {
		calls = append(calls, r.windowsCall(a.Provider.Group, a.Provider.Lines))
	}
	cmds := r.runAll(ctx, calls)
	var provider WindowResult
	var providerErr error
	if a.Provider != nil {
		if v, err := cmds[1].Slice(); err != nil {
			providerErr = r.fail("add_windows", err)
		} else {
			provider, providerErr = readWindows(a.Provider.Group, a.Provider.Lines, v)
		}
	}
	v, err := cmds[0].Slice()
	if err != nil {
		return AdmissionResult{Provider: provider, ProviderErr: providerErr}, r.fail("admit", err)
	}
	res, expired, err := readAdmission(a, v)
	res.Provider, res.ProviderErr = provider, providerErr
	if err != nil {
		return res, fmt.Errorf("store admit: %w", err)
	}
	r.metrics.expiredN(expired)
	return res, nil
}

// readAdmission decodes the admit script's reply (lua/admit.lua).
func readAdmission(a Admission, v []any) (AdmissionResult, int, error) {
	p := reply{v: v}
	res := AdmissionResult{Refused: Stage(p.next())}
	nowMs, expired := p.next(), int(p.next())
	ran := int(p.next())
	if ran > len(a.Buckets) {
		return res, 0, fmt.Errorf("reply ran %d of %d buckets", ran, len(a.Buckets))
	}
	for range ran {
		allowed, left, retry := p.next(), p.next(), p.next()
		res.Buckets = append(res.Buckets, BucketResult{Allowed: allowed == 1, Remaining: left, RetryAfter: time.Duration(retry) * time.Microsecond})
	}
	refused := int(p.next())
	if len(a.Windows) > 0 {
		added := res.Refused != RefusedBucket && res.Refused != RefusedWindows
		res.Windows = WindowResult{Allowed: added, Refused: refused - 1, Lines: make([]WindowState, len(a.Windows))}
		for i, l := range a.Windows {
			used, start := p.next(), p.next()
			res.Windows.Lines[i] = windowState(a.Group, l, used, start, nowMs)
		}
	}
	status, line, remaining, hour, n := p.next(), int(p.next()), p.next(), int(p.next()), int(p.next())
	if n != 0 && n != len(a.Lines) {
		return res, 0, fmt.Errorf("reply has %d budget lines, want %d", n, len(a.Lines))
	}
	for i := range n {
		spent, reserved, hourSpent := p.next(), p.next(), p.next()
		res.Lines = append(res.Lines, lineState(a.Lines[i].Limit, spent, reserved, hour, hourSpent))
	}
	switch status {
	case 0:
		if line < 1 || line > len(a.Lines) {
			return res, 0, fmt.Errorf("reply refused by budget line %d of %d", line, len(a.Lines))
		}
		res.Budget = &BudgetExceededError{Line: a.Lines[line-1], Remaining: remaining, Requested: a.Amount}
	case -1:
		res.Budget = ErrDuplicateReservation
	}
	return res, expired, p.err
}

// reply reads a script's integer reply in order; the first problem sticks.
type reply struct {
	v   []any
	i   int
	err error
}

func (p *reply) next() int64 {
	if p.err != nil {
		return 0
	}
	if p.i >= len(p.v) {
		p.err = fmt.Errorf("reply ends after %d values", len(p.v))
		return 0
	}
	x, ok := p.v[p.i].(int64)
	if !ok {
		p.err = fmt.Errorf("reply value %d is %T, want integer", p.i, p.v[p.i])
	}
	p.i++
	return x
}

// Settle implements Requests. The reservation's script carries the deltas
// of its tenant's windows; every other delta is a window_adjust of its own;
// all of them go in one round trip.
func (r *Redis) Settle(ctx context.Context, s Settlement) (SettleResult, error) {
	if err := s.check(); err != nil {
		return SettleResult{}, err
	}
	res := SettleResult{Applied: make([]bool, len(s.Windows))}
	var (
		calls  []scriptCall
		own    []int // deltas in the reservation's script, in order
		others []int // deltas sent on their own, one per call after it
	)
	if s.settles() {
		base := r.tenantBase(s.ID.Tenant)
		var deltas []any
		for i, d := range s.Windows {
			if t, ok := tenantOf(d.Ref.Group); ok && t == s.ID.Tenant {
				own = append(own, i)
				deltas = append(deltas, strings.TrimPrefix(r.windowKey(d.Ref), base), d.Ref.endMillis(), d.Delta)
			}
		}
		args := []any{s.ID.Request, s.actual(), r.retention.Milliseconds()}
		if len(own) > 0 {
			args = append(append(args, r.now(), base, len(own)), deltas...)
		}
		calls = append(calls, scriptCall{settleScript, []string{r.expiryKey(s.ID.Tenant), r.resKey(s.ID)}, args})
	}
	for i, d := range s.Windows {
		if !slices.Contains(own, i) {
			others = append(others, i)
			calls = append(calls, scriptCall{windowAdjustScript, []string{r.windowKey(d.Ref)}, []any{r.now(), d.Ref.endMillis(), d.Delta}})
		}
	}
	cmds := r.runAll(ctx, calls)
	var err error
	if s.settles() {
		err = r.readSettle(&res, settleOp(s), cmds[0], own)
		cmds = cmds[1:]
	}
	for c, cmd := range cmds {
		n, cmdErr := cmd.Int64()
		switch {
		case cmdErr == nil:
			res.Applied[others[c]] = n == 1
		case errors.Is(r.fail("adjust_window", cmdErr), ErrUnavailable):
			res.Lost++
		default:
			err = errors.Join(err, fmt.Errorf("store adjust_window: %w", cmdErr))
		}
	}
	return res, err
}

// readSettle reads the settle script's reply: the outcome, then one 1/0
// per delta of own.
func (r *Redis) readSettle(res *SettleResult, op string, cmd *redis.Cmd, own []int) error {
	v, err := cmd.Slice()
	if err != nil {
		err = r.fail(op, err)
		if errors.Is(err, ErrUnavailable) {
			res.Lost += len(own)
		}
		return err
	}
	n, err := ints(v, 1+len(own))
	if err != nil {
		return fmt.Errorf("store %s: %w", op, err)
	}
	for j, i := range own {
		res.Applied[i] = n[1+j] == 1
	}
	res.Outcome, err = settleOutcome(op, v)
	return err
}

// settleOp names a Settle's reservation step for errors and metrics.
func settleOp(s Settlement) string {
	if s.Release {
		return "release"
	}
	return "commit"
}

// scriptCall is one script run of a round trip.
type scriptCall struct {
	s    *redis.Script
	keys []string
	args []any
}

// runAll sends calls in one round trip, a pipeline of EVALSHAs. A call whose
// script the server did not have yet (NOSCRIPT) did not run: it is sent
// again with the script's source, as Script.Run does.
func (r *Redis) runAll(ctx context.Context, calls []scriptCall) []*redis.Cmd {
	switch len(calls) {
	case 0:
		return nil
	case 1:
		c := calls[0]
		return []*redis.Cmd{c.s.Run(ctx, r.c, c.keys, c.args...)}
	}
	pipe := r.c.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = c.s.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // each command keeps its own error
	for i, c := range calls {
		if err := cmds[i].Err(); errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmds[i] = c.s.Eval(ctx, r.c, c.keys, c.args...)
		}
	}
	return cmds
}
