package cachespec

import (
	"fmt"
	"time"

	"github.com/switchyard/switchyard/configs/yamlval"
	"github.com/switchyard/switchyard/filters/filterspec"
)

// Args are the response cache's arguments on a route.
type Args struct {
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

// MaxAnswer is the largest answer the cache keeps.
const MaxAnswer = 1 << 20

// Default is what a route that lists "cache" without arguments
// gets: the specification's 15 s in memory and 5 min in Redis.
func Default() Args {
	return Args{TTL: 5 * time.Minute, MemoryTTL: 15 * time.Second, StaleFor: time.Hour, DeterministicOnly: true, MaxMemory: 64 << 20}
}

type argsSpec struct {
	TTL               *yamlval.Duration `yaml:"ttl"`
	MemoryTTL         *yamlval.Duration `yaml:"memory_ttl"`
	StaleFor          *yamlval.Duration `yaml:"stale_for"`
	DeterministicOnly *bool             `yaml:"deterministic_only"`
	MaxMemory         *yamlval.ByteSize `yaml:"max_memory"`
	Tenants           []string          `yaml:"tenants"`
}

// Parse decodes a cache entry's arguments strictly over the
// defaults.
func Parse(ref filterspec.Ref) (Args, error) {
	c := Default()
	if len(ref.Shorthand) > 0 {
		return c, fmt.Errorf("filter cache takes no shorthand arguments; use {name: cache, args: {...}}")
	}
	if len(ref.Args) == 0 {
		return c, nil
	}
	var s argsSpec
	if err := filterspec.DecodeArgs(ref, "ttl, memory_ttl, stale_for, deterministic_only, max_memory, tenants", &s); err != nil {
		return c, err
	}
	set := func(dst *time.Duration, v *yamlval.Duration) {
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
	case c.MaxMemory < MaxAnswer || c.MaxMemory > 16<<30:
		return c, fmt.Errorf("cache args: max_memory must be between 1MiB and 16GiB")
	}
	return c, nil
}
