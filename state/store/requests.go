package store

import (
	"fmt"
	"strings"
	"time"
)

// Admission is everything one request takes from its tenant's limits, in
// the order Admit checks it. Each step is all or nothing and the first
// refusal ends the admission; what the steps before it took stays taken,
// exactly as the separate TakeTokens, AddWindows and Reserve calls would
// have left it.
//
// Every bucket name and the window group must be the tenant's: its scope
// string ("tenant:acme") or that string followed by "/" and more
// ("tenant:acme/key:k1"). Redis keeps such counters beside the tenant's
// budgets, in one cluster slot, which is what makes one script possible.
type Admission struct {
	Tenant string
	// Buckets give one token each, in order; a bucket that refuses ends
	// the admission.
	Buckets []Bucket
	// Group and Windows are one AddWindows call.
	Group   string
	Windows []WindowLine
	// ID, Lines, Amount and TTL are one Reserve call; no Lines, no
	// reservation. ID.Tenant must be Tenant.
	ID     ReservationID
	Lines  []BudgetLine
	Amount int64
	TTL    time.Duration
	// Provider, when set, is one more AddWindows, on a group outside the
	// tenant (a provider's own limits), sent in the same round trip. It is
	// not part of the admission: it runs whatever the admission answers,
	// and the caller gives back what it added if the request does not go
	// on.
	Provider *WindowsCall
}

// WindowsCall is one AddWindows call.
type WindowsCall struct {
	Group string
	Lines []WindowLine
}

// Stage is the step of an admission that refused it.
type Stage uint8

// Stages of an admission, in the order they run.
const (
	Admitted       Stage = iota // nothing refused
	RefusedBucket               // the last of AdmissionResult.Buckets
	RefusedWindows              // AdmissionResult.Windows.Refused
	RefusedBudget               // AdmissionResult.Budget
)

// AdmissionResult is Admit's answer.
type AdmissionResult struct {
	Refused Stage
	// Buckets answers each bucket taken from: all of them when no bucket
	// refused, else up to and including the one that did.
	Buckets []BucketResult
	// Windows is the AddWindows answer. When a bucket refused nothing was
	// added: Allowed is false, Refused -1, and Lines still describe the
	// counters, for the caller's headers.
	Windows WindowResult
	// Budget is Reserve's error: nil when the reservation was made (or not
	// asked for, or not reached), a *BudgetExceededError, or
	// ErrDuplicateReservation.
	Budget error
	// Lines is each budget line's current period once the reservation step
	// ran, granted or not (nil when it did not run), in the order of
	// Admission.Lines: enough for the cost governor without a Budget call.
	Lines []LineState
	// Provider answers Admission.Provider; ProviderErr is its own error
	// (its slot unreachable, say). Both are set whatever Admit's error.
	Provider    WindowResult
	ProviderErr error
}

// LineState is a budget line's current period as an admission saw it.
type LineState struct {
	Spent     int64
	Reserved  int64 // after this admission's reservation, when granted
	Remaining int64 // Limit - Spent - Reserved, never below 0
	// Hour is the store's current UTC hour and HourSpent that hour's spend
	// (always 0 on a monthly line): the slot the cost governor watches.
	Hour      int
	HourSpent int64
}

func lineState(limit, spent, reserved int64, hour int, hourSpent int64) LineState {
	return LineState{Spent: spent, Reserved: reserved, Remaining: max(limit-spent-reserved, 0), Hour: hour, HourSpent: hourSpent}
}

// reserves reports whether the admission asks for a reservation.
func (a Admission) reserves() bool { return len(a.Lines) > 0 }

func (a Admission) check() error {
	if err := checkSegment("tenant", a.Tenant); err != nil {
		return err
	}
	for _, b := range a.Buckets {
		if err := b.check(1); err != nil {
			return err
		}
		if t, ok := tenantOf(b.Name); !ok || t != a.Tenant {
			return fmt.Errorf("%w: bucket %s is not tenant %s's", ErrInvalid, b.Name, a.Tenant)
		}
	}
	if len(a.Windows) > 0 {
		if err := checkWindows(a.Group, a.Windows); err != nil {
			return err
		}
		if t, ok := tenantOf(a.Group); !ok || t != a.Tenant {
			return fmt.Errorf("%w: window group %s is not tenant %s's", ErrInvalid, a.Group, a.Tenant)
		}
	}
	if a.Provider != nil {
		if err := checkWindows(a.Provider.Group, a.Provider.Lines); err != nil {
			return err
		}
	}
	if !a.reserves() {
		return nil
	}
	if a.ID.Tenant != a.Tenant {
		return fmt.Errorf("%w: reservation of tenant %s in an admission of %s", ErrInvalid, a.ID.Tenant, a.Tenant)
	}
	return checkReserve(a.ID, a.Lines, a.Amount, a.TTL)
}

// Settlement is what a finished request gives back, in one step: its
// reservation committed or released, and corrections to the windows it
// was counted in (its estimate of tokens against what it used).
type Settlement struct {
	// ID is the reservation to settle; the zero ID settles none.
	ID ReservationID
	// Release gives the reservation back; otherwise Actual micro-USD are
	// committed on it.
	Release bool
	Actual  int64
	Windows []WindowDelta
}

// WindowDelta is one AdjustWindow call.
type WindowDelta struct {
	Ref   WindowRef
	Delta int64
}

// SettleResult is Settle's answer. Applied and Lost are set whatever
// Settle's error says about the reservation.
type SettleResult struct {
	// Outcome is what Commit or Release would have returned; 0 without a
	// reservation or with an error.
	Outcome Outcome
	// Applied says for each delta whether it was applied, as AdjustWindow
	// reports.
	Applied []bool
	// Lost counts deltas the store could not be reached for. They are
	// corrections, not spend: they are dropped, never retried.
	Lost int
}

func (s Settlement) settles() bool { return s.ID != (ReservationID{}) }

func (s Settlement) check() error {
	if s.settles() {
		if err := s.ID.check(); err != nil {
			return err
		}
		if !s.Release {
			if err := checkMoney("actual", s.Actual); err != nil {
				return err
			}
		}
	}
	for _, d := range s.Windows {
		if err := d.Ref.check(d.Delta); err != nil {
			return err
		}
	}
	return nil
}

// actual is the amount the settle script and Memory take: -1 releases.
func (s Settlement) actual() int64 {
	if s.Release {
		return -1
	}
	return s.Actual
}

// tenantOf names the tenant a bucket name or window group belongs to:
// "tenant:<t>" or "tenant:<t>/…". Other names belong to no tenant.
func tenantOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "tenant:")
	if !ok {
		return "", false
	}
	t, _, _ := strings.Cut(rest, "/")
	if checkSegment("tenant", t) != nil {
		return "", false
	}
	return t, true
}
