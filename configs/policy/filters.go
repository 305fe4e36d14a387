package policy

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"go.yaml.in/yaml/v3"
)

// filterSpec is what the policy language knows of a filter: where it runs,
// which filters must be on the same route for it to work, and how its
// arguments are checked. The filters themselves (filters/...) implement
// these names; xds validates a policy with this table alone, without
// linking them.
type filterSpec struct {
	// order fixes where the filter runs: request hooks ascend it, response
	// hooks descend it. It is the plugin.cfg of the project, never the
	// policy's to change.
	order    int
	requires []string
	// args checks the entry's arguments; nil means it takes none.
	args func(FilterRef) error
}

var filterTable = map[string]filterSpec{
	"admin":        {order: 50},
	"auth":         {order: 100},
	"catalog":      {order: 150, requires: []string{"auth"}},
	"usage_report": {order: 160, requires: []string{"auth"}},
	"feedback":     {order: 170, requires: []string{"auth"}},
	"router":       {order: 200, requires: []string{"auth"}},
	// quota runs after router: a budget reservation prices the plan the
	// router chose.
	"quota": {order: 300, requires: []string{"auth", "router"}, args: func(r FilterRef) error {
		_, err := ParseQuotaArgs(r)
		return err
	}},
	// usage sits inside translate so that its Done runs after translate's,
	// which prices the answer (a stream the client cut short included).
	"usage":     {order: 350, requires: []string{"translate"}},
	"translate": {order: 400, requires: []string{"router"}},
}

// FilterOrder returns a filter's position in every chain; unknown names
// sort last.
func FilterOrder(name string) int {
	if s, ok := filterTable[name]; ok {
		return s.order
	}
	return 1 << 30
}

// KnownFilter reports whether the policy language has a filter of that name.
func KnownFilter(name string) bool {
	_, ok := filterTable[name]
	return ok
}

func filterNames() []string {
	names := make([]string, 0, len(filterTable))
	for n := range filterTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// filterProblems checks one entry of a route's filter list against the
// table: the name known, its requirements listed on the route, its
// arguments well formed. It returns the reasons, none when the entry is
// good.
func filterProblems(r FilterRef, listed map[string]bool) []string {
	spec, ok := filterTable[r.Name]
	if !ok {
		return []string{fmt.Sprintf("unknown filter %q (known: %v)", r.Name, filterNames())}
	}
	var probs []string
	for _, need := range spec.requires {
		if !listed[need] {
			probs = append(probs, fmt.Sprintf("filter %q needs filter %q on the same route", r.Name, need))
		}
	}
	check := spec.args
	if check == nil {
		check = NoArgs
	}
	if err := check(r); err != nil {
		probs = append(probs, err.Error())
	}
	return probs
}

// NoArgs refuses arguments for a filter that takes none.
func NoArgs(r FilterRef) error {
	if len(r.Shorthand) > 0 || len(r.Args) > 0 {
		return fmt.Errorf("filter %q takes no arguments", r.Name)
	}
	return nil
}

// QuotaArgs are the quota filter's arguments on a route; the limits
// themselves are in the policy's tenants and providers.
type QuotaArgs struct {
	// ReservationTTL is how long a budget reservation outlives a replica
	// that crashed while holding it. It must exceed the longest request
	// (a slow stream); a reservation that expires is still committed, late.
	ReservationTTL time.Duration
	// StoreTimeout bounds each store call on the request path, so an
	// unreachable store is noticed quickly and on_store_outage decides.
	StoreTimeout time.Duration
	// BudgetRefresh is how old the cost governor's view of a tenant's
	// budget may be. Every admission of the tenant refreshes the view, so
	// the governor reads the store itself only for a view older than this
	// (a tenant's first request, or one after a quiet spell).
	BudgetRefresh time.Duration
}

// DefaultQuotaArgs is what a route that lists "quota" without arguments
// gets.
func DefaultQuotaArgs() QuotaArgs {
	return QuotaArgs{ReservationTTL: 15 * time.Minute, StoreTimeout: time.Second, BudgetRefresh: time.Second}
}

type quotaArgsSpec struct {
	ReservationTTL *Duration `yaml:"reservation_ttl"`
	StoreTimeout   *Duration `yaml:"store_timeout"`
	BudgetRefresh  *Duration `yaml:"budget_refresh"`
}

// ParseQuotaArgs decodes a quota entry's arguments strictly over the
// defaults.
func ParseQuotaArgs(ref FilterRef) (QuotaArgs, error) {
	c := DefaultQuotaArgs()
	if len(ref.Shorthand) > 0 {
		return c, fmt.Errorf("filter quota takes no shorthand arguments; use {name: quota, args: {...}}")
	}
	if len(ref.Args) == 0 {
		return c, nil
	}
	raw, err := yaml.Marshal(ref.Args)
	if err != nil {
		return c, fmt.Errorf("quota args: %w", err)
	}
	var s quotaArgsSpec
	d := yaml.NewDecoder(bytes.NewReader(raw))
	d.KnownFields(true)
	if err := d.Decode(&s); err != nil {
		return c, fmt.Errorf("quota args (known: reservation_ttl, store_timeout, budget_refresh): %w", err)
	}
	if s.ReservationTTL != nil {
		c.ReservationTTL = time.Duration(*s.ReservationTTL)
	}
	if s.StoreTimeout != nil {
		c.StoreTimeout = time.Duration(*s.StoreTimeout)
	}
	if s.BudgetRefresh != nil {
		c.BudgetRefresh = time.Duration(*s.BudgetRefresh)
	}
	switch {
	case c.ReservationTTL < time.Minute || c.ReservationTTL > 24*time.Hour:
		return c, fmt.Errorf("quota args: reservation_ttl must be between 1m and 24h")
	case c.StoreTimeout < time.Millisecond || c.StoreTimeout > time.Minute:
		return c, fmt.Errorf("quota args: store_timeout must be between 1ms and 1m")
	case c.BudgetRefresh > time.Minute:
		return c, fmt.Errorf("quota args: budget_refresh must be at most 1m")
	}
	return c, nil
}
