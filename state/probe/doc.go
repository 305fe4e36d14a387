// Package probe checks that the models a provider serves do what the
// policy says they can. For a provider whose policy asks for it
// (providers[].probes), every interval each probed model gets one tiny
// request per capability it claims among tools, vision, JSON mode and
// streaming with usage, translated and keyed as a real request is. A
// capability whose probe fails is routed around: the router skips the
// model for requests that need it, keeps it for the others, and takes it
// back for them once a probe passes again.
//
// Replicas share the work, the spend and the verdicts through the store:
// one replica per interval wins a provider's slot (a window counter of
// one) and probes it; each probe's worst-case cost is reserved on the
// provider's daily window counter before it is sent and settled to its
// actual cost after, so the daily cap holds across replicas; and the
// verdicts are written to a board that every replica reads each tick.
// README.md describes the probes, the verdicts and the metrics.
package probe
