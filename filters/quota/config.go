package quota

import (
	"github.com/switchyard/switchyard/filters/quota/quotaspec"
)

// Config is the quota filter's arguments on a route (configs/policy checks
// them at load, for xds too).
type Config = quotaspec.Args

// DefaultConfig is what a route that lists "quota" without arguments gets.
func DefaultConfig() Config { return quotaspec.Default() }
