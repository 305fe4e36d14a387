package store

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Store is everything the gateway shares between replicas.
type Store interface {
	Limits
	Budgets
	Requests
	KeyRing
	HealthBoard
	SketchBoard
	TallyBoard
}

// Limits holds request and token rate limits.
type Limits interface {
	// TakeTokens takes requested tokens from bucket b if it holds that many,
	// with the semantics of Spring Cloud Gateway's RedisRateLimiter: the
	// bucket starts full, refills continuously at b.ReplenishRate tokens per
	// second up to b.BurstCapacity, and a refused call takes nothing.
	TakeTokens(ctx context.Context, b Bucket, requested int64) (BucketResult, error)
	// AddWindows adds each line's Amount to its fixed window counter if every
	// line stays within its limit, and adds nothing otherwise.
	AddWindows(ctx context.Context, group string, lines []WindowLine) (WindowResult, error)
	// AdjustWindow adds delta (which may be negative) to the window counter
	// that ref names, for charges known only after the answer. It reports
	// false, and changes nothing, once that window has ended.
	AdjustWindow(ctx context.Context, ref WindowRef, delta int64) (bool, error)
}

// Budgets holds USD budgets and the reservations made against them.
type Budgets interface {
	// Reserve holds amount on every line, or on none: it succeeds only if
	// spent + reserved + amount <= limit on each line in its current period.
	// A refusal is a *BudgetExceededError naming the first line that refused.
	// Reservations past their TTL in the same tenant are expired first.
	Reserve(ctx context.Context, id ReservationID, lines []BudgetLine, amount int64, ttl time.Duration) error
	// Commit turns the reservation into spend of actual micro-USD on each of
	// its lines and gives back what it held. Actual may exceed the reserved
	// amount; the spend is recorded in full. A reservation that already expired
	// still records its spend (OutcomeLateCommit). Committing or releasing a
	// settled reservation again changes nothing and reports what happened
	// before; an ID never seen (or forgotten after the retention) is
	// ErrUnknownReservation.
	Commit(ctx context.Context, id ReservationID, actual int64) (Outcome, error)
	// Release gives back everything the reservation held, for a failed or
	// cancelled request. Like Commit it is idempotent.
	Release(ctx context.Context, id ReservationID) (Outcome, error)
	// Budget reads line's current period. The limit is the caller's: the store
	// keeps counters, the policy keeps limits.
	Budget(ctx context.Context, line BudgetLine) (BudgetState, error)
	// Sweep expires every reservation past its TTL and returns how many it
	// expired. Reserve and Budget expire lazily too, so correctness never
	// depends on Sweep; it returns held amounts sooner and, in Memory, also
	// drops counters whose time is over.
	Sweep(ctx context.Context) (int, error)
}

// Requests is the quota filter's way through Limits and Budgets: each
// request is admitted in one step and settled in one step, with the
// semantics of the separate calls each stands for. On Redis each is one
// round trip.
type Requests interface {
	// Admit takes a token from each bucket, adds to the windows and
	// reserves on the budget lines, in that order, stopping at the first
	// refusal (see Admission). A refusal is an answer, not an error; on
	// Redis the whole admission is one atomic script.
	Admit(ctx context.Context, a Admission) (AdmissionResult, error)
	// Settle applies every window delta and commits or releases the
	// reservation, as AdjustWindow and Commit or Release would; its error
	// is the one Commit or Release would have returned. On Redis the
	// reservation and the deltas of its tenant's windows are one atomic
	// script; deltas of other windows go in the same round trip.
	Settle(ctx context.Context, s Settlement) (SettleResult, error)
}

// KeyRing holds virtual keys issued at runtime, by the SHA-256 of the key.
type KeyRing interface {
	// PutKey creates or replaces the record under rec.Hash. Revocation is not
	// part of the put: a revoked hash stays revoked.
	PutKey(ctx context.Context, rec KeyRecord) error
	// Key returns the record for hash, or ErrNotFound.
	Key(ctx context.Context, hash string) (KeyRecord, error)
	// TenantKeys lists a tenant's records, oldest first.
	TenantKeys(ctx context.Context, tenant string) ([]KeyRecord, error)
	// RevokeKey marks the record revoked; revoking twice keeps the first time.
	// The record is deleted Options.RevokedKeyRetention after the first
	// revocation. An unknown hash is ErrNotFound.
	RevokeKey(ctx context.Context, hash string) error
}

// HealthBoard shares provider health and fault drills between replicas.
type HealthBoard interface {
	// SetHealth records state for provider, stamped with the store's time.
	SetHealth(ctx context.Context, provider, state string) error
	// Health returns the last state set for provider, or ErrNotFound.
	Health(ctx context.Context, provider string) (ProviderHealth, error)
	// Healths returns the last state set for every provider, sorted by
	// provider: one read for a replica that follows them all.
	Healths(ctx context.Context) ([]ProviderHealth, error)
	// SetDrill marks provider as down for a fault drill.
	SetDrill(ctx context.Context, provider string) error
	// ClearDrill ends the drill for provider.
	ClearDrill(ctx context.Context, provider string) error
	// Drills lists the providers marked down, sorted.
	Drills(ctx context.Context) ([]string, error)
}

// Clock tells the time. Tests inject one they can move.
type Clock interface {
	Now() time.Time
}

// Options configures a store. The zero value is the production default.
type Options struct {
	// Clock pins the time. Nil means the authoritative clock: the system clock
	// for Memory and the Redis server's TIME for Redis, so replicas with
	// skewed clocks agree. Set it only in tests.
	Clock Clock
	// Retention is how long a settled or expired reservation is remembered,
	// for idempotent commits and late commits (and so how long a spooled
	// commit may wait). Default 48h.
	Retention time.Duration
	// RevokedKeyRetention is how long a revoked key's record stays (the
	// admin API lists when it was revoked) before the store deletes it: a
	// key revoked is never valid again, so its record need not live
	// forever. Default 30 days.
	RevokedKeyRetention time.Duration
	// Prefix starts every Redis key. Default "sy". Memory ignores it.
	Prefix string
	// Metrics, when set, counts outages and expiries.
	Metrics *Metrics
}

const (
	defaultRetention           = 48 * time.Hour
	defaultRevokedKeyRetention = 30 * 24 * time.Hour
)

func (o Options) revokedKeyRetention() time.Duration {
	if o.RevokedKeyRetention > 0 {
		return o.RevokedKeyRetention
	}
	return defaultRevokedKeyRetention
}

func (o Options) retention() time.Duration {
	if o.Retention > 0 {
		return o.Retention
	}
	return defaultRetention
}

var (
	// ErrUnavailable wraps the cause when the backing store cannot be reached;
	// the caller decides per limit whether to fail open or closed.
	ErrUnavailable = errors.New("store unavailable")
	// ErrInvalid reports arguments the store refuses before touching state.
	ErrInvalid = errors.New("invalid store argument")
	// ErrNotFound reports a key record or health record that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrBudgetExceeded matches every *BudgetExceededError.
	ErrBudgetExceeded = errors.New("budget exceeded")
	// ErrUnknownReservation reports a commit or release of an ID the store
	// does not know (never reserved, or forgotten after the retention).
	ErrUnknownReservation = errors.New("unknown reservation")
	// ErrDuplicateReservation reports a Reserve with an ID already in use.
	ErrDuplicateReservation = errors.New("duplicate reservation")
)

// BudgetExceededError is Reserve's refusal. It names the refusing line and
// what remained on it.
type BudgetExceededError struct {
	Line      BudgetLine
	Remaining int64 // micro-USD left in the line's current period
	Requested int64 // micro-USD asked for
}

// Error names the scope and period, never a key.
func (e *BudgetExceededError) Error() string {
	return "budget " + e.Line.Scope.String() + " " + e.Line.Period.String() + " exceeded: " +
		strconv.FormatInt(e.Remaining, 10) + " of " + strconv.FormatInt(e.Line.Limit, 10) +
		" micro-USD remaining, " + strconv.FormatInt(e.Requested, 10) + " requested"
}

// Is makes errors.Is(err, ErrBudgetExceeded) true.
func (e *BudgetExceededError) Is(target error) bool { return target == ErrBudgetExceeded }

// Outcome says what Commit or Release did.
type Outcome uint8

// Outcomes of Commit and Release; the Already* ones changed nothing.
const (
	OutcomeCommitted        Outcome = iota + 1 // held amount released, actual spent
	OutcomeReleased                            // held amount given back
	OutcomeLateCommit                          // reservation had expired; actual spent anyway
	OutcomeAlreadyCommitted                    // no-op
	OutcomeAlreadyReleased                     // no-op
	OutcomeAlreadyExpired                      // no-op: release of an expired reservation
	OutcomeSpooled                             // Spooler only: kept for replay
)

var outcomeNames = [...]string{"", "committed", "released", "late_commit", "already_committed", "already_released", "already_expired", "spooled"}

// String returns the outcome's snake_case name, as used in logs.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o != 0 {
		return outcomeNames[o]
	}
	return "unknown"
}

// Applied reports whether the call changed the counters.
func (o Outcome) Applied() bool {
	return o == OutcomeCommitted || o == OutcomeReleased || o == OutcomeLateCommit
}
