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
	"console":      {order: 60},
	"auth":         {order: 100},
	"catalog":      {order: 150, requires: []string{"auth"}},
	"usage_report": {order: 160, requires: []string{"auth"}},
	"feedback":     {order: 170, requires: []string{"auth"}},
	"router":       {order: 200, requires: []string{"auth"}},
	// quota runs after router: a budget reservation prices the plan the
	// router chose. On a route that reaches no model (feedback) it holds
	// each request to the caller's rate limits alone.
	"quota": {order: 300, requires: []string{"auth"}, args: func(r FilterRef) error {
		_, err := ParseQuotaArgs(r)
		return err
	}},
	// usage sits inside translate so that its Done runs after translate's,
	// which prices the answer (a stream the client cut short included).
	"usage": {order: 350, requires: []string{"translate"}},
	// cache runs after quota, so a hit is still held to the caller's rate
	// limits (its budget reservation commits nothing), and inside usage, so
	// usage records a hit or a degraded answer the cache made.
	"cache": {order: 320, requires: []string{"auth", "router", "translate", "usage"}, args: func(r FilterRef) error {
		_, err := ParseCacheArgs(r)
		return err
	}},
	// translate needs usage: every request that reaches a provider is a
	// ledger row, whatever the route (a token count included).
	"translate": {order: 400, requires: []string{"router", "usage"}},
	// judge sits inside translate, so its response hook reads the answer
	// in OpenAI's format whatever the provider spoke.
	"judge": {order: 360, requires: []string{"auth", "router", "translate"}, args: func(r FilterRef) error {
		_, err := ParseJudgeArgs(r)
		return err
	}},
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

// decodeArgs decodes a filter entry's arguments into spec, refusing any
// field spec does not have; known lists the fields for the error.
func decodeArgs(ref FilterRef, known string, spec any) error {
	raw, err := yaml.Marshal(ref.Args)
	if err != nil {
		return fmt.Errorf("%s args: %w", ref.Name, err)
	}
	d := yaml.NewDecoder(bytes.NewReader(raw))
	d.KnownFields(true)
	if err := d.Decode(spec); err != nil {
		return fmt.Errorf("%s args (known: %s): %w", ref.Name, known, err)
	}
	return nil
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
	var s quotaArgsSpec
	if err := decodeArgs(ref, "reservation_ttl, store_timeout, budget_refresh", &s); err != nil {
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

// CacheArgs are the response cache's arguments on a route.
type CacheArgs struct {
	// TTL is how long an answer is served from the shared cache (Redis).
	TTL time.Duration
	// MemoryTTL is how long a replica serves an answer from its own memory
	// without asking Redis; without Redis, memory is the only layer and
	// keeps answers for TTL.
	MemoryTTL time.Duration
	// StaleFor is how long past TTL an answer is kept for degraded mode:
	// served, marked X-Switchyard-Degraded, when every attempt failed. 0 turns
	// degraded mode off.
	StaleFor time.Duration
	// DeterministicOnly caches only requests with temperature 0, or whose
	// client asks for it (x-switchyard-cache: on).
	DeterministicOnly bool
	// MaxMemory bounds the answers a replica keeps in memory for the
	// route, in bytes; the least recently used go first.
	MaxMemory int64
	// Tenants limits the cache to these tenants; empty is every tenant.
	Tenants []string
}

// MaxCachedAnswer is the largest answer the cache keeps.
const MaxCachedAnswer = 1 << 20

// DefaultCacheArgs is what a route that lists "cache" without arguments
// gets: the specification's 15 s in memory and 5 min in Redis.
func DefaultCacheArgs() CacheArgs {
	return CacheArgs{TTL: 5 * time.Minute, MemoryTTL: 15 * time.Second, StaleFor: time.Hour, DeterministicOnly: true, MaxMemory: 64 << 20}
}

type cacheArgsSpec struct {
	TTL               *Duration `yaml:"ttl"`
	MemoryTTL         *Duration `yaml:"memory_ttl"`
	StaleFor          *Duration `yaml:"stale_for"`
	DeterministicOnly *bool     `yaml:"deterministic_only"`
	MaxMemory         *ByteSize `yaml:"max_memory"`
	Tenants           []string  `yaml:"tenants"`
}

// ParseCacheArgs decodes a cache entry's arguments strictly over the
// defaults.
func ParseCacheArgs(ref FilterRef) (CacheArgs, error) {
	c := DefaultCacheArgs()
	if len(ref.Shorthand) > 0 {
		return c, fmt.Errorf("filter cache takes no shorthand arguments; use {name: cache, args: {...}}")
	}
	if len(ref.Args) == 0 {
		return c, nil
	}
	var s cacheArgsSpec
	if err := decodeArgs(ref, "ttl, memory_ttl, stale_for, deterministic_only, max_memory, tenants", &s); err != nil {
		return c, err
	}
	set := func(dst *time.Duration, v *Duration) {
		if v != nil {
			*dst = time.Duration(*v)
		}
	}
	set(&c.TTL, s.TTL)
	set(&c.MemoryTTL, s.MemoryTTL)
	set(&c.StaleFor, s.StaleFor)
	if s.DeterministicOnly != nil {
		c.DeterministicOnly = *s.DeterministicOnly
	}
	if s.MaxMemory != nil {
		c.MaxMemory = int64(*s.MaxMemory)
	}
	c.Tenants = s.Tenants
	switch {
	case c.TTL < time.Second || c.TTL > 24*time.Hour:
		return c, fmt.Errorf("cache args: ttl must be between 1s and 24h")
	case c.MemoryTTL <= 0 || c.MemoryTTL > c.TTL:
		return c, fmt.Errorf("cache args: memory_ttl must be above 0 and at most ttl (%s)", c.TTL)
	case c.StaleFor < 0 || c.StaleFor > 7*24*time.Hour:
		return c, fmt.Errorf("cache args: stale_for must be between 0 (degraded mode off) and 168h")
	case c.MaxMemory < MaxCachedAnswer || c.MaxMemory > 16<<30:
		return c, fmt.Errorf("cache args: max_memory must be between 1MiB and 16GiB")
	}
	return c, nil
}
