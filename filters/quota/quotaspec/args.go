package quotaspec

import (
	"fmt"
	"time"

	"github.com/switchyard/switchyard/configs/yamlval"
	"github.com/switchyard/switchyard/filters/filterspec"
)

// Args are the quota filter's arguments on a route; the limits
// themselves are in the policy's tenants and providers.
type Args struct {
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

// Default is what a route that lists "quota" without arguments
// gets.
func Default() Args {
	return Args{ReservationTTL: 15 * time.Minute, StoreTimeout: time.Second, BudgetRefresh: time.Second}
}

type argsSpec struct {
	ReservationTTL *yamlval.Duration `yaml:"reservation_ttl"`
	StoreTimeout   *yamlval.Duration `yaml:"store_timeout"`
	BudgetRefresh  *yamlval.Duration `yaml:"budget_refresh"`
}

// Parse decodes a quota entry's arguments strictly over the
// defaults.
func Parse(ref filterspec.Ref) (Args, error) {
	c := Default()
	if len(ref.Shorthand) > 0 {
		return c, fmt.Errorf("filter quota takes no shorthand arguments; use {name: quota, args: {...}}")
	}
	if len(ref.Args) == 0 {
		return c, nil
	}
	var s argsSpec
	if err := filterspec.DecodeArgs(ref, "reservation_ttl, store_timeout, budget_refresh", &s); err != nil {
		return c, err
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
