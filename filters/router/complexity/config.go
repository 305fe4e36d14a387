package complexity

import (
	"errors"
	"fmt"
)

// Config holds the operator's settings. Scores are calibrated quantiles
// (see README.md): a request with score s is harder than a share s of
// typical traffic, so a threshold t marks the hardest 1−t of traffic.
// Zero fields take their defaults.
type Config struct {
	// MediumAt is the lowest score classed Medium. Default 0.4: the
	// easiest 40 % of typical traffic is Simple.
	MediumAt float64 `yaml:"medium_at"`
	// ComplexAt is the lowest score classed Complex. Default 0.7: the
	// hardest 30 % of typical traffic is Complex.
	ComplexAt float64 `yaml:"complex_at"`
	// MaxScanBytes bounds how much of the task message is read character
	// by character, which bounds the decision time; longer messages still
	// count in full for length. Default 4096, which keeps the worst case near
	// 30 µs on a 2024 server core.
	MaxScanBytes int `yaml:"max_scan_bytes"`
	// Model replaces the built-in model; it is set by code (the routing
	// benchmark's leave-one-out models), never from YAML.
	Model *Model `yaml:"-"`
}

// Default thresholds; see Config.
const (
	DefaultMediumAt  = 0.4
	DefaultComplexAt = 0.7
)

// withDefaults returns c with its zero fields filled in.
func (c Config) withDefaults() Config {
	if c.MediumAt == 0 {
		c.MediumAt = DefaultMediumAt
	}
	if c.ComplexAt == 0 {
		c.ComplexAt = DefaultComplexAt
	}
	if c.MaxScanBytes == 0 {
		c.MaxScanBytes = DefaultMaxScanBytes
	}
	return c
}

// Validate reports every invalid setting of c, after defaults apply.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.MediumAt < 0 || c.MediumAt > 1 {
		errs = append(errs, fmt.Errorf("medium_at: %v is outside [0, 1]", c.MediumAt))
	}
	if c.ComplexAt < 0 || c.ComplexAt > 1 {
		errs = append(errs, fmt.Errorf("complex_at: %v is outside [0, 1]", c.ComplexAt))
	}
	if c.MediumAt > c.ComplexAt {
		errs = append(errs, fmt.Errorf("medium_at: %v is above complex_at %v", c.MediumAt, c.ComplexAt))
	}
	if c.MaxScanBytes < 0 {
		errs = append(errs, fmt.Errorf("max_scan_bytes: %d is negative", c.MaxScanBytes))
	}
	if c.Model != nil {
		if err := c.Model.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("complexity: %w", err)
	}
	return nil
}
