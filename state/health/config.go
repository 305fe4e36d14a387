package health

import (
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

// The monitor's thresholds are policy schema (the policy's health section);
// these names keep the monitor's own vocabulary.
type (
	Config         = policy.HealthConfig
	Limits         = policy.HealthLimits
	BreakerConfig  = policy.BreakerConfig
	RecoveryConfig = policy.RecoveryConfig
	CheckConfig    = policy.CheckConfig
)

// DefaultConfig returns the policy's default thresholds.
func DefaultConfig() Config { return policy.DefaultHealthConfig() }

// bucketSpan is the length of one window bucket.
func bucketSpan(c *Config) time.Duration { return c.Window / time.Duration(c.Buckets) }
