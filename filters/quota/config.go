package quota

import (
	"bytes"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/configs/policy"
)

// Config is the quota filter's arguments on a route; the limits themselves
// are in the policy's tenants and providers.
type Config struct {
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

// DefaultConfig is what a route that lists "quota" without arguments gets.
func DefaultConfig() Config {
	return Config{ReservationTTL: 15 * time.Minute, StoreTimeout: time.Second, BudgetRefresh: time.Second}
}

type configSpec struct {
	ReservationTTL *policy.Duration `yaml:"reservation_ttl"`
	StoreTimeout   *policy.Duration `yaml:"store_timeout"`
	BudgetRefresh  *policy.Duration `yaml:"budget_refresh"`
}

// parse decodes the route's arguments strictly over the defaults.
func parse(ref policy.FilterRef) (Config, error) {
	c := DefaultConfig()
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
	var s configSpec
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
