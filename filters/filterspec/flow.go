package filterspec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Field names a part of the [Exchange] that one filter fills for others.
type Field string

// The fields filters hand each other. The chain itself fills the parsed
// body (before request-body hooks) and the response (before
// response hooks); those need no declaration.
const (
	// FieldCaller is [filters.Exchange.Caller]: who is calling.
	FieldCaller Field = "Caller"
	// FieldPressure is [filters.Exchange.Pressure]: the cost governor's verdict.
	FieldPressure Field = "Pressure"
	// FieldPlan is [filters.Exchange.Plan]: the targets to try, in order.
	FieldPlan Field = "Plan"
	// FieldRouting is [filters.Exchange.RouteReason] and [filters.Exchange.Routing]: why
	// the plan is what it is.
	FieldRouting Field = "Routing"
	// FieldSent is [filters.Exchange.Sent]: what the client has been sent.
	FieldSent Field = "Sent"
	// FieldUsage is [filters.Exchange.Usage]: the answer's tokens and cost.
	FieldUsage Field = "Usage"
	// FieldCached is [filters.Exchange.Cached]: the response cache answered.
	FieldCached Field = "Cached"
	// FieldLabels is [filters.Exchange.Labels]: the request's tags and session
	// (the chain adds the body's metadata where the route takes it).
	FieldLabels Field = "Labels"
	// FieldRedaction is [filters.Exchange.Redaction]: what was masked of the
	// request before it reached a provider.
	FieldRedaction Field = "Redaction"
)

// Phase is when a hook runs, in the order a request lives them.
type Phase int

// The phases, in time order. Request phases run filters in ascending
// order, response phases (from response headers on) in descending order.
const (
	PhaseRequestHeaders Phase = iota
	PhaseRequestBody
	PhaseAttempt
	PhaseAttemptDone
	PhaseResponseHeaders
	PhaseResponseBody
	PhaseDone
)

var phaseNames = [...]string{"request headers", "request body", "attempt", "attempt done", "response headers", "response body", "done"}

func (p Phase) String() string { return phaseNames[p] }

// Descending reports whether the phase runs the chain from its last filter
// to its first.
func (p Phase) Descending() bool { return p >= PhaseResponseHeaders }

// Use is one filter's use of one field in one phase: it provides the
// field (writes it, or rewrites what an earlier filter wrote), needs it
// (reads what an earlier step must have written), or reads it when there
// (the zero value means "nobody said", and whoever says must say it
// earlier).
type Use struct {
	Phase    Phase
	Field    Field
	Provides bool
	Optional bool
}

// Provides declares that a filter writes f in phase p.
func Provides(p Phase, f Field) Use { return Use{Phase: p, Field: f, Provides: true} }

// Needs declares that a filter reads f in phase p, which an earlier step
// must have provided.
func Needs(p Phase, f Field) Use { return Use{Phase: p, Field: f} }

// Reads declares that a filter reads f in phase p when a filter of the
// route provides it, and works with its zero value otherwise; a provider
// that runs later than the reader is an error.
func Reads(p Phase, f Field) Use { return Use{Phase: p, Field: f, Optional: true} }

// CheckFlow walks the steps of a chain of these filters in the order they
// run (phase by phase; within a phase, filters ascending or descending by
// [Decl.Order]) and reports every need that no earlier step provides.
func CheckFlow(decls []*Decl) error {
	fs := slices.Clone(decls)
	slices.SortStableFunc(fs, func(a, b *Decl) int { return cmp.Compare(a.Order, b.Order) })
	type step struct {
		filter string
		uses   []Use
	}
	byPhase := make([][]step, len(phaseNames))
	for _, f := range fs {
		perPhase := map[Phase][]Use{}
		for _, u := range f.Uses {
			perPhase[u.Phase] = append(perPhase[u.Phase], u)
		}
		for p, us := range perPhase {
			byPhase[p] = append(byPhase[p], step{filter: f.Name, uses: us})
		}
	}
	// providers names, per field, the filters of the chain that provide
	// it: a filter that reads a field when there and rewrites it (quota
	// narrows a plan, on a route that may have none) is not its own
	// provider.
	providers := map[Field]map[string]bool{}
	for _, steps := range byPhase {
		for _, s := range steps {
			for _, u := range s.uses {
				if u.Provides {
					if providers[u.Field] == nil {
						providers[u.Field] = map[string]bool{}
					}
					providers[u.Field][s.filter] = true
				}
			}
		}
	}
	providedByOthers := func(f Field, self string) bool {
		n := len(providers[f])
		if providers[f][self] {
			n--
		}
		return n > 0
	}
	provided := map[Field]string{} // field → the filter that last provided it
	var probs []string
	for p := range byPhase {
		steps := byPhase[p]
		if Phase(p).Descending() {
			for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
				steps[i], steps[j] = steps[j], steps[i]
			}
		}
		for _, s := range steps {
			for _, u := range s.uses {
				if !u.Provides && provided[u.Field] == "" && (!u.Optional || providedByOthers(u.Field, s.filter)) {
					probs = append(probs, fmt.Sprintf("filter %q needs %s at %s, but no filter before it provides it (check configs/policy's filter order and the route's filters)", s.filter, u.Field, Phase(p)))
				}
			}
			for _, u := range s.uses {
				if u.Provides {
					provided[u.Field] = s.filter
				}
			}
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s", strings.Join(probs, "; "))
	}
	return nil
}
