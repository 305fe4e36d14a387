package quota

import "github.com/switchyard/switchyard/configs/policy"

// Config is the quota filter's arguments on a route (configs/policy checks
// them at load, for xds too).
type Config = policy.QuotaArgs

// DefaultConfig is what a route that lists "quota" without arguments gets.
func DefaultConfig() Config { return policy.DefaultQuotaArgs() }

func parse(ref policy.FilterRef) (Config, error) { return policy.ParseQuotaArgs(ref) }
