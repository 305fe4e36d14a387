package complexity

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Model is a linear model over Features plus the calibration that turns
// its raw output into a score: the raw values at the 0th, 1st, …, 100th
// percentile of a calibration sample of prompts. A score s therefore means
// "harder than a share s of the calibration prompts".
type Model struct {
	// Features names the inputs, in FeatureNames order; a model written
	// for another feature set is refused rather than misread.
	Features []string `json:"features"`
	// Weights holds one weight per feature.
	Weights []float64 `json:"weights"`
	// Quantiles holds the raw outputs at evenly spaced quantiles of the
	// calibration prompts, ascending.
	Quantiles []float64 `json:"quantiles"`
	// Source says how the model was made, for people reading the file.
	Source string `json:"source,omitempty"`
}

//go:embed model.json
var defaultModelJSON []byte

var defaultModel = sync.OnceValues(func() (*Model, error) { return ParseModel(defaultModelJSON) })

// DefaultModel returns the built-in model, trained on all three RouteLLM
// benchmarks by bench/routing (see README.md). Callers must not modify it.
func DefaultModel() (*Model, error) { return defaultModel() }

// ParseModel decodes and validates a model file.
func ParseModel(data []byte) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Model
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("complexity: model: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate reports whether m fits this package's feature set and has a
// usable calibration.
func (m *Model) Validate() error {
	var errs []error
	if len(m.Features) != NumFeatures {
		errs = append(errs, fmt.Errorf("model has %d features, want %d", len(m.Features), NumFeatures))
	} else {
		for i, name := range m.Features {
			if name != featureNames[i] {
				errs = append(errs, fmt.Errorf("model feature %d is %q, want %q", i, name, featureNames[i]))
			}
		}
	}
	if len(m.Weights) != NumFeatures {
		errs = append(errs, fmt.Errorf("model has %d weights, want %d", len(m.Weights), NumFeatures))
	}
	for i, w := range m.Weights {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			errs = append(errs, fmt.Errorf("model weight %d is %v", i, w))
		}
	}
	if len(m.Quantiles) < 2 {
		errs = append(errs, fmt.Errorf("model has %d quantiles, want at least 2", len(m.Quantiles)))
	}
	for i, q := range m.Quantiles {
		if math.IsNaN(q) || math.IsInf(q, 0) {
			errs = append(errs, fmt.Errorf("model quantile %d is %v", i, q))
		} else if i > 0 && q < m.Quantiles[i-1] {
			errs = append(errs, fmt.Errorf("model quantile %d (%v) is below quantile %d (%v)", i, q, i-1, m.Quantiles[i-1]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("complexity: %w", err)
	}
	return nil
}

// Raw returns the model's uncalibrated output for f.
func (m *Model) Raw(f *Features) float64 {
	var raw float64
	for i, w := range m.Weights {
		raw += w * f[i]
	}
	return raw
}

// Calibrate maps a raw output to [0, 1] by linear interpolation between
// the calibration quantiles. A raw value tied with several quantiles gets
// the middle of them, so a block of identical prompts lands mid-block.
func (m *Model) Calibrate(raw float64) float64 {
	q := m.Quantiles
	last := float64(len(q) - 1)
	lo := sort.SearchFloat64s(q, raw)
	if lo == len(q) {
		return 1
	}
	if q[lo] == raw {
		hi := lo
		for hi+1 < len(q) && q[hi+1] == raw {
			hi++
		}
		return float64(lo+hi) / 2 / last
	}
	if lo == 0 {
		return 0
	}
	frac := (raw - q[lo-1]) / (q[lo] - q[lo-1])
	return (float64(lo-1) + frac) / last
}
