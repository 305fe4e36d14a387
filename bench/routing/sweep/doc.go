// Package sweep scores a two-model threshold router offline: a prompt goes to
// the strong model iff its score is at or above the threshold. It computes
// the whole cost/quality curve, the cheapest point that reaches a quality
// target, and a threshold chosen on some benchmarks for use on another, so
// that held-out figures never see the labels they are scored on.
package sweep
