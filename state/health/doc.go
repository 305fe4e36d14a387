// Package health judges, from live traffic, whether each provider and each
// of its models may serve requests, and how much of their traffic they may
// take while they recover.
//
// A [Monitor] keeps, per model, a sliding window of attempt outcomes (error
// rate, p99 latency, time to first token) and the last remaining-quota
// reading, and derives a [State] from them: healthy, degraded (routed with a
// lower weight) or unavailable (not routed). Per provider it keeps a circuit
// breaker, built on sony/gobreaker, and the fault-drill flag. Whatever
// leaves the unavailable state comes back progressively: a canary admits a
// growing share of requests (10 %, 50 %, then all by default), and a failure
// during the canary sends it back.
//
// Every decision reads time from the clock given to [New], so tests drive
// the state machine without sleeping. README.md draws the states and lists
// the configuration keys.
package health
