package priors

import (
	"errors"
	"math"
)

// The estimator.
//
// A verdict v in [0, 1] on a weak answer (1: as good as the strong
// model's) says the weak tier lost u = 1 − v on that request. The
// classifier's shipped curve says how that loss spreads over its score:
// a request at score s loses, in expectation, base·exposure(s), where
// base is the curve's loss of the all-weak tier (1 − its quality at
// share 0) and exposure(s) = b·e^(b·s)/(e^b − 1), the exponential whose
// curve has the shipped curve's APGR (its mean over [0, 1] is 1). A
// domain multiplies that by its factor f: a Gamma posterior with the
// shipped calibration as its prior (f = 1, worth priorWeight verdicts),
//
//	f = (priorWeight·F + Σu/base) / (priorWeight + Σexposure(s)),
//
// where the sums run over the domain's verdicts, each weighted by the
// score of the request it grades. Weighing by the score is what lets
// the verdicts be taken where the router sent weak answers (the easier
// requests of a domain it deems hard) without reading those domains as
// easier than they are. F is the tenant's factor on the route, the
// same estimate pooled over all its domains, so that a domain without
// evidence of its own is routed as the tenant's average.
//
// Routing then ranks a request by its expected loss f·base·exposure(s):
// on the score's scale, s + ln(f/F)/b. The route's share of strong
// calls (its thresholds, or the calibration that holds an auto route's
// share) stays what it was; the domains trade strong calls among
// themselves.

// model is what the estimator reads off the shipped curve.
type model struct {
	slope float64 // b
	base  float64 // the all-weak tier's loss
}

// newModel reads the estimator's constants off a quality curve: q[i] is
// the share of all-strong quality kept when the hardest i/(len(q)−1) of
// requests go to the strong model (complexity.Curve).
func newModel(q []float64) (model, error) {
	if len(q) < 2 {
		return model{}, errors.New("priors: the curve needs at least two points")
	}
	base := 1 - q[0]
	if !(base > 0 && base < 1) {
		return model{}, errors.New("priors: the curve's all-weak quality must be between 0 and 1")
	}
	// The curve's APGR: the mean share of the gap recovered.
	apgr := 0.0
	for _, v := range q {
		apgr += (v - q[0]) / base
	}
	apgr /= float64(len(q))
	return model{slope: slopeFor(apgr), base: base}, nil
}

// apgrOf is the APGR of ranking by a score whose expected loss grows as
// e^(b·s) over uniformly spread scores: 1/(1 − e^−b) − 1/b.
func apgrOf(b float64) float64 {
	if b < 1e-9 {
		return 0.5
	}
	return 1/(-math.Expm1(-b)) - 1/b
}

// slopeFor inverts apgrOf by bisection; a curve no better than random
// gets a flat exposure, and one past the model's reach its steepest.
func slopeFor(apgr float64) float64 {
	lo, hi := 0.0, 50.0
	if apgr <= 0.5 {
		return 0
	}
	if apgr >= apgrOf(hi) {
		return hi
	}
	for range 100 {
		mid := (lo + hi) / 2
		if apgrOf(mid) < apgr {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// exposure is the expected loss at score s relative to the average
// request's.
func (m model) exposure(s float64) float64 {
	s = min(max(s, 0), 1)
	if m.slope < 1e-9 {
		return 1
	}
	return m.slope * math.Exp(m.slope*s) / math.Expm1(m.slope)
}

// factor is the posterior mean of a factor with prior mean prior worth
// weight verdicts, given the loss and exposure summed over verdicts.
func (m model) factor(prior, weight, loss, exposure float64) float64 {
	return (weight*prior + loss/m.base) / (weight + exposure)
}

// center is a tenant's average learnt domain: the factor p at which the
// learnt domains (those with verdicts), each estimated with p as its
// prior and weighed by its requests and verdicts, average p in logs. A
// tenant of one domain gets that domain's own estimate, so its shift is
// 0 and it routes exactly as it would without learning. ln(f(p)/p)
// falls as p grows, so p is found by bisection on ln p; fallback is
// returned when no domain has a verdict.
func (m model) center(priorWeight float64, evidence [][numSums]float64, fallback float64) float64 {
	gap := func(lp float64) (g, weight float64) {
		p := math.Exp(lp)
		for _, e := range evidence {
			if e[sumVerdicts] > 0 {
				wd := e[sumRequests] + e[sumVerdicts]
				g += wd * (math.Log(m.factor(p, priorWeight, e[sumLoss], e[sumExposure])) - lp)
				weight += wd
			}
		}
		return g, weight
	}
	lo, hi := math.Log(1e-6), math.Log(1e6)
	if _, weight := gap(0); weight == 0 {
		return fallback
	}
	for range 60 {
		mid := (lo + hi) / 2
		if g, _ := gap(mid); g > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2)
}

// maxShift bounds a domain's shift: past 1 every request of the domain
// goes one way at any threshold already.
const maxShift = 2

// shift is the score shift of a domain with factor f in a tenant with
// factor pooled.
func (m model) shift(f, pooled float64) float64 {
	if m.slope < 1e-9 || f <= 0 || pooled <= 0 {
		return 0
	}
	return min(max(math.Log(f/pooled)/m.slope, -maxShift), maxShift)
}
