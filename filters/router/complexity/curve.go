package complexity

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Curve is what the classifier's ranking keeps of the strong model's
// quality when a share of requests goes to it: Quality[i] is the share of
// all-strong quality kept when the hardest i/(len−1) of requests go to
// the strong model. The shipped curve is measured by bench/routing on
// public benchmarks the scoring model never saw (leave one benchmark
// out), taking at each share the worst benchmark, so a quality target
// read off it is a cautious one.
type Curve struct {
	Quality []float64 `json:"quality"`
	Source  string    `json:"source,omitempty"`
}

//go:embed curve.json
var defaultCurveJSON []byte

var defaultCurve = sync.OnceValues(func() (*Curve, error) { return ParseCurve(defaultCurveJSON) })

// DefaultCurve returns the shipped curve. Callers must not modify it.
func DefaultCurve() (*Curve, error) { return defaultCurve() }

// ParseCurve decodes and validates a curve file.
func ParseCurve(data []byte) (*Curve, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Curve
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("complexity: curve: %w", err)
	}
	if len(c.Quality) < 2 {
		return nil, errors.New("complexity: curve: needs at least two points")
	}
	for i, q := range c.Quality {
		if !(q >= 0 && q <= 1.5) {
			return nil, fmt.Errorf("complexity: curve: point %d is %g, outside [0, 1.5]", i, q)
		}
	}
	return &c, nil
}

// ShareFor is the least strong share from which on the curve keeps at
// least target of the strong quality (so more strong calls never fall
// below it again); 1 when only all-strong does.
func (c *Curve) ShareFor(target float64) float64 {
	n := len(c.Quality) - 1
	at := n
	for i := n; i >= 0 && c.Quality[i] >= target; i-- {
		at = i
	}
	return float64(at) / float64(n)
}
