// Package train fits the complexity classifier's linear model on RouteLLM
// benchmarks. Training is closed-form (weighted ridge regression solved by
// Cholesky) and iterates in a fixed order, so the same data always gives
// the same model, bit for bit; it is fast enough that the routing benchmark
// fits its three leave-one-benchmark-out models on every run.
package train
