package calibration

import (
	"math"
	"time"
)

// Adjust lets ratings of weak-model answers move a route's strong share
// within [Min, Max].
type Adjust struct {
	Min, Max float64
	// Bar is the mean rating (0..1) weak-model answers are held to.
	Bar float64
}

// The estimator: a weak answer's rating s in [0, 1] is a fractional
// success of "a weak answer is acceptable", so the decayed ratings are a
// Beta(1 + Σs, 1 + Σ(1−s)) posterior of its mean. The share moves one
// step per refresh only while the bar lies outside the posterior's
// central 90 % (mean ± 1.645 sd, the normal approximation, fine past
// minRatings), so noise does not walk it, and the evidence fades with the
// route's half-life, so after a move the new answers decide the next.
const (
	minRatings = 20
	adjustStep = 0.01
	zBound     = 1.645
)

// evidence is a route's decayed ratings of weak-model answers.
type evidence struct {
	good, bad float64 // Σs and Σ(1−s)
	decayedAt time.Time
}

func (e *evidence) add(score float64) {
	e.good += score
	e.bad += 1 - score
}

func (e *evidence) decay(now time.Time, halfLife time.Duration) {
	if dt := now.Sub(e.decayedAt); dt > 0 && halfLife > 0 {
		f := math.Exp2(-dt.Seconds() / halfLife.Seconds())
		e.good, e.bad = e.good*f, e.bad*f
	}
	e.decayedAt = now
}

// nextShare is the strong share after one refresh given the evidence.
func nextShare(share float64, good, bad float64, a Adjust) float64 {
	if good+bad >= minRatings {
		al, be := 1+good, 1+bad
		n := al + be
		mean := al / n
		sd := math.Sqrt(al * be / (n * n * (n + 1)))
		switch {
		case mean+zBound*sd < a.Bar:
			share += adjustStep // weak answers fall short: send more to the strong models
		case mean-zBound*sd > a.Bar:
			share -= adjustStep // weak answers are good enough: save more
		}
	}
	return min(max(share, a.Min), a.Max)
}
